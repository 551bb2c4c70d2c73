import { describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { chatEvent } from '@elma/domain/testing';
import { scratchElma } from '../testing/scratch-elma';
import { StoredUsageCounter } from './stored-usage';

const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
const RECOUNT_MS = 60_000;

describe('StoredUsageCounter on a running embedded ELMA', () => {
  const s = scratchElma('stored-usage');

  /** Ingests `n` events and waits until the index holds them. */
  async function ingest(n: number, from: number) {
    const { position } = await s.elma.ingest.ingest(agent, {
      events: Array.from({ length: n }, (_, i) => chatEvent(`cust-${from + i}`, `turn ${from + i}: 客户搬到了里昂`)),
    });
    await s.elma.runner.waitFor(BigInt(position));
  }

  /** A counter whose clock and settling the spec holds. */
  function counter() {
    const clock = { now: 0 };
    let release = () => {};
    let held = false;
    const usage = new StoredUsageCounter({
      index: s.elma.index,
      settle: () => (held ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve()),
      nowMs: () => clock.now,
      recountMs: RECOUNT_MS,
      minRecountGapMs: 5_000,
    });
    return {
      usage,
      clock,
      hold: () => (held = true),
      release: () => {
        held = false;
        release();
      },
    };
  }

  it('answers a write at once from its counters while a periodic recount runs, and takes the recount when done', async () => {
    await ingest(20, 0);
    const c = counter();
    const first = await c.usage.fresh(agent.tenant);
    expect(first).toEqual(await s.elma.index.storedUsage(agent.tenant));
    expect(first.memories).toBeGreaterThanOrEqual(20);

    await ingest(10, 20);
    c.clock.now = RECOUNT_MS + 1;
    c.hold();
    // The recount now waits for its settling: the write's check must not (it once waited out a whole count).
    const answered = await Promise.race([c.usage.fresh(agent.tenant), new Promise((resolve) => setTimeout(() => resolve('held'), 2_000))]);
    expect(answered).toEqual(first);

    // A write admitted while the count runs is added to what it counts.
    c.usage.reserve(agent.tenant, { memories: 2, bytes: 100 });
    c.release();
    const counted = await s.elma.index.storedUsage(agent.tenant);
    await expect.poll(() => c.usage.peek(agent.tenant)).toEqual({ memories: counted.memories + 2, bytes: counted.bytes + 100 });
    expect(counted.memories).toBeGreaterThanOrEqual(first.memories + 10);
  });

  it('counts first when the tenant was never counted, whatever the clock says', async () => {
    const c = counter();
    c.clock.now = 10 * RECOUNT_MS;
    // A reservation alone is not a count: the first check still counts the index.
    c.usage.reserve(agent.tenant, { memories: 1, bytes: 1 });
    expect(await c.usage.fresh(agent.tenant)).toEqual(await s.elma.index.storedUsage(agent.tenant));
  });

  it('counts ahead the tenants it is given, one after the other, and counts no more once stopped', async () => {
    await ingest(5, 100);
    const c = counter();
    await c.usage.countAhead([agent.tenant, 'nobody']);
    expect(c.usage.peek(agent.tenant)).toEqual(await s.elma.index.storedUsage(agent.tenant));
    expect(c.usage.known().map(([tenant]) => tenant)).toEqual([agent.tenant, 'nobody']);

    const stopped = counter();
    stopped.usage.stop();
    await stopped.usage.countAhead([agent.tenant]);
    expect(stopped.usage.known()).toEqual([]);
  });
});
