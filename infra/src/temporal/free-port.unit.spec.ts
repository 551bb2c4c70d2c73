import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './dev-server';

/** Where Linux begins handing out local ports of outgoing connections and of `listen(0)`. */
const ephemeralFrom = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  it('draws ports below the ephemeral range, which another process’s listen(0) or connection cannot take meanwhile', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(ephemeralFrom);
    }
  });

  it('returns a port that can be bound, and none of those to avoid', async () => {
    const avoid = await Promise.all([freePort(), freePort()]);
    const port = await freePort(avoid);
    expect(avoid).not.toContain(port);
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});
