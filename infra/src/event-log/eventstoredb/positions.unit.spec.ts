import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idleCheckpoint, isInternalStream, matchesFilter, packPosition, serverFilter, unpackPosition } from './positions';
import { decodeCheckpoint, encodeCheckpoint } from './checkpoint-store';
import { adminBaseUrl, scavengeOutcome } from './scavenge';

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

describe('EventStoreDB positions', () => {
  it('packing keeps the (commit, prepare) order and round-trips', () => {
    fc.assert(
      fc.property(u64, u64, u64, u64, (c1, p1, c2, p2) => {
        const a = packPosition({ commit: c1, prepare: p1 });
        const b = packPosition({ commit: c2, prepare: p2 });
        const pairOrder = c1 === c2 ? Math.sign(Number(p1 - p2)) : Math.sign(Number(c1 - c2));
        expect(Math.sign(Number(a - b))).toBe(pairOrder);
        expect(unpackPosition(a)).toEqual({ commit: c1, prepare: p1 });
      }),
    );
  });

  it('a checkpoint with prepare 0 sorts before the event at the same commit', () => {
    expect(packPosition({ commit: 500n, prepare: 0n })).toBeLessThan(packPosition({ commit: 500n, prepare: 500n }));
  });

  it('refuses positions outside 64 bits and before the start', () => {
    expect(() => packPosition({ commit: 1n << 64n, prepare: 0n })).toThrow(RangeError);
    expect(() => packPosition({ commit: -1n, prepare: 0n })).toThrow(RangeError);
    expect(() => unpackPosition(-1n)).toThrow(RangeError);
  });
});

describe('EventStoreDB checkpoints', () => {
  it('round-trip any position as a decimal string, -1 included', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -1n, max: (1n << 128n) - 1n }), (p) => {
        expect(decodeCheckpoint(encodeCheckpoint(p))).toBe(p);
      }),
    );
  });

  it('ignore a stored value that is not a position', () => {
    for (const data of [null, {}, { position: 12 }, { position: '1e3' }, { position: '-2' }, { position: 'x' }])
      expect(decodeCheckpoint(data)).toBeUndefined();
  });

  it('an idle checkpoint goes to the head only when no kept event lies before it', () => {
    expect(idleCheckpoint(10n, 20n, undefined)).toBe(20n);
    expect(idleCheckpoint(10n, 20n, 25n)).toBe(20n);
    expect(idleCheckpoint(10n, 20n, 15n)).toBeUndefined();
    expect(idleCheckpoint(10n, 20n, 20n)).toBeUndefined();
    expect(idleCheckpoint(20n, 20n, undefined)).toBeUndefined();
    expect(idleCheckpoint(-1n, 5n, undefined)).toBe(5n);
  });
});

describe('EventStoreDB filters', () => {
  it('send stream prefixes with the namespace, types as an exact regex, else exclude system streams', () => {
    expect(serverFilter({ streamNamePrefix: ['memory-t1-'], eventType: ['A'] }, 'ns.')).toEqual({
      on: 'streamName',
      prefixes: ['ns.memory-t1-'],
    });
    expect(serverFilter({ eventType: ['A'] }, 'ns.')).toEqual({ on: 'streamName', prefixes: ['ns.'] });
    expect(serverFilter({ eventType: ['Memory.Recorded', 'B'] }, '')).toEqual({ on: 'eventType', regex: '^(?:Memory\\.Recorded|B)$' });
    expect(serverFilter(undefined, '')).toEqual({ on: 'streamName', regex: '^[^$]' });
  });

  it('the type regex matches exactly the listed types', () => {
    const spec = serverFilter({ eventType: ['a.b', 'c'] }, '');
    const regex = new RegExp((spec as { regex: string }).regex);
    expect(['a.b', 'c'].every((t) => regex.test(t))).toBe(true);
    expect(['axb', 'cc', 'a.b.c', ''].some((t) => regex.test(t))).toBe(false);
  });

  it('the client-side check applies both parts of a port filter', () => {
    const filter = { streamNamePrefix: ['memory-t1-'], eventType: ['A'] };
    expect(matchesFilter(filter, 'memory-t1-x', 'A')).toBe(true);
    expect(matchesFilter(filter, 'memory-t1-x', 'B')).toBe(false);
    expect(matchesFilter(filter, 'memory-t2-x', 'A')).toBe(false);
    expect(matchesFilter(undefined, 'anything', 'B')).toBe(true);
  });

  it('hides system streams, other namespaces and checkpoint streams', () => {
    expect(isInternalStream('$stats-1', '')).toBe(true);
    expect(isInternalStream('elma-checkpoint-views', '')).toBe(true);
    expect(isInternalStream('ns.elma-checkpoint-views', 'ns.')).toBe(true);
    expect(isInternalStream('other.memory-t1-a', 'ns.')).toBe(true);
    expect(isInternalStream('ns.memory-t1-a', 'ns.')).toBe(false);
    expect(isInternalStream('memory-t1-a', '')).toBe(false);
  });
});

describe('EventStoreDB scavenge', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  const since = at(10);

  it('reports the first scavenge started after the deletions, and whether it completed', () => {
    const before = { type: '$scavengeStarted', created: at(5), data: { scavengeId: 'old' } };
    const started = { type: '$scavengeStarted', created: at(11), data: { scavengeId: 's1' } };
    const done = { type: '$scavengeCompleted', created: at(12), data: { scavengeId: 's1', result: 'Success' } };

    expect(scavengeOutcome([], since)).toMatchObject({ requested: false, completed: false, result: 'not started' });
    expect(scavengeOutcome([before], since)).toMatchObject({ requested: false, completed: false });
    expect(scavengeOutcome([before, started], since)).toMatchObject({ requested: true, completed: false, id: 's1', result: 'running' });
    expect(scavengeOutcome([done, started, before], since)).toEqual({
      engine: 'eventstoredb',
      method: 'scavenge',
      requested: true,
      completed: true,
      id: 's1',
      result: 'Success',
    });
  });

  it('a failed scavenge is not a completed one', () => {
    const started = { type: '$scavengeStarted', created: at(11), data: { scavengeId: 's1' } };
    const failed = { type: '$scavengeCompleted', created: at(12), data: { scavengeId: 's1', result: 'Failed', error: 'disk' } };
    expect(scavengeOutcome([started, failed], since)).toMatchObject({ requested: true, completed: false, result: 'Failed' });
  });

  it('finds the admin API from the connection string, with TLS and credentials', () => {
    expect(adminBaseUrl('esdb://localhost:2113?tls=false')).toEqual({ base: 'http://localhost:2113' });
    expect(adminBaseUrl('esdb://admin:changeit@db.example:2113?tls=true')).toEqual({
      base: 'https://db.example:2113',
      authorization: `Basic ${Buffer.from('admin:changeit').toString('base64')}`,
    });
    expect(adminBaseUrl('esdb+discover://node1:2113,node2:2113')).toEqual({ base: 'https://node1:2113' });
    expect(() => adminBaseUrl('http://x')).toThrow();
  });
});
