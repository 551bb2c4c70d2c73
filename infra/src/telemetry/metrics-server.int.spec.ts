import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElmaMetrics } from './metrics';
import { serveMetrics } from './metrics-server';

describe('a lone worker serves its metrics on a port of its own', () => {
  const metrics = new ElmaMetrics({ processMetrics: false });
  let server: Awaited<ReturnType<typeof serveMetrics>>;
  beforeAll(async () => {
    server = await serveMetrics(metrics.registry, { host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => server?.close());

  it('GET /metrics answers the process families in Prometheus text, anything else 404', async () => {
    metrics.erasureSteps.observe({ step: 'shred_keys', outcome: 'ok' }, 0.2);
    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    expect(await response.text()).toMatch(/^elma_erasure_step_duration_seconds_count\{step="shred_keys",outcome="ok"\} 1$/m);
    expect((await fetch(`http://127.0.0.1:${server.port}/health`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' })).status).toBe(404);
  });
});
