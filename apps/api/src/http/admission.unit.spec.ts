import { describe, expect, it } from 'vitest';
import { AdmissionGate } from './admission';

const settle = () => new Promise((r) => setImmediate(r));

describe('admission shared between tenants', () => {
  it('a lone tenant may use every slot and the whole queue', async () => {
    const gate = new AdmissionGate({ maxInflight: 2, maxQueue: 2, maxQueueWaitMs: 10_000 });
    const held = await Promise.all([gate.enter('a'), gate.enter('a')]);
    const waiting = [gate.enter('a'), gate.enter('a')];
    expect(await gate.enter('a')).toBeUndefined();
    expect(gate.state).toEqual({ inflight: 2, waiting: 2, shed: 1 });
    held.forEach((release) => release!());
    expect((await Promise.all(waiting)).every((release) => typeof release === 'function')).toBe(true);
  });

  it('a freed slot goes to the waiting tenant holding the fewest, ahead of older waiters of a busier tenant', async () => {
    const gate = new AdmissionGate({ maxInflight: 2, maxQueue: 10, maxQueueWaitMs: 10_000 });
    const [a1] = await Promise.all([gate.enter('a'), gate.enter('a')]);
    const order: string[] = [];
    const a3 = gate.enter('a').then((r) => (order.push('a3'), r));
    const a4 = gate.enter('a').then((r) => (order.push('a4'), r));
    const b1 = gate.enter('b').then((r) => (order.push('b1'), r));
    a1!();
    await settle();
    expect(order).toEqual(['b1']);
    expect(gate.inflightByTenant()).toEqual(
      new Map([
        ['a', 1],
        ['b', 1],
      ]),
    );
    (await b1)!();
    await settle();
    expect(order).toEqual(['b1', 'a3']);
    void a3;
    void a4;
  });

  it('a full queue makes room for another tenant by refusing the newest waiter of the tenant with the most', async () => {
    const gate = new AdmissionGate({ maxInflight: 1, maxQueue: 3, maxQueueWaitMs: 1_000 });
    const held = await gate.enter('a');
    const a = [gate.enter('a'), gate.enter('a'), gate.enter('a')];
    const b = gate.enter('b');
    // The newest of A's waiters is refused; B waits in its place and is admitted next, ahead of A's older ones.
    expect(await a[2]).toBeUndefined();
    expect(gate.state).toMatchObject({ waiting: 3, shed: 1 });
    held!();
    expect(typeof (await b)).toBe('function');
    expect(gate.state).toMatchObject({ inflight: 1, waiting: 2 });
    // A tenant never pushes out its own waiters, nor those of a tenant with hardly more than itself: refused at once.
    void gate.enter('c');
    const started = performance.now();
    expect(await gate.enter('a')).toBeUndefined();
    expect(await gate.enter('c')).toBeUndefined();
    // At once: well before the one-second queue wait (not a timing figure: a busy machine may pause a worker).
    expect(performance.now() - started).toBeLessThan(500);
    void a;
  });
});
