import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_POLICY,
  LegalHoldNotFound,
  PolicyVersionConflict,
  WrongExpectedVersion,
  legalHoldDecider,
  policyDecider,
  tombstoneDecider,
  type TombstoneEvent,
} from '@elma/domain';
import { SqliteEventLog } from '@elma/infra';
import { deterministicUuid } from '@elma/shared';
import { foldStream, handleCommand } from './handle-command';
import { countStreamReads } from './testing';

const { version: base, ...document } = DEFAULT_POLICY;
const tombstoneData = (event: TombstoneEvent) => ({
  id: deterministicUuid('tombstones', 't', event.data.requestId),
  type: event.type,
  data: event.data,
});

describe('handleCommand on a real SQLite log', () => {
  let dir: string;
  let log: SqliteEventLog;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'elma-command-'));
    log = SqliteEventLog.open(join(dir, 'events.db'));
  });
  afterEach(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const count = async (stream: string) => {
    let n = 0;
    for await (const _ of log.readStream(stream)) n++;
    return n;
  };
  const write = (requestId: string, fingerprints: string[]) =>
    handleCommand(
      log,
      'tombstone-t',
      tombstoneDecider,
      { type: 'WriteTombstones', requestId, fingerprints },
      { toEventData: tombstoneData },
    );

  it('reads, folds, decides and appends; the first append expects no stream', async () => {
    const first = await write('era_1', ['b', 'a', 'b']);
    expect(first.events).toEqual([{ type: 'TombstonesWritten', data: { requestId: 'era_1', fingerprints: ['a', 'b'] } }]);
    expect(first.revision).toBe(0n);
    expect([...first.state.requests]).toEqual(['era_1']);
    const stored = [];
    for await (const event of log.readStream('tombstone-t')) stored.push({ type: event.type, data: event.data });
    expect(stored).toEqual(first.events);
  });

  it('a repeated command decides nothing and appends nothing', async () => {
    await write('era_1', ['a']);
    const again = await write('era_1', ['a']);
    expect(again.events).toEqual([]);
    expect(again.revision).toBe(0n);
    expect(await count('tombstone-t')).toBe(1);
  });

  it('decides on the state it is given without reading, and re-reads and decides afresh when that state was stale', async () => {
    const stale = await foldStream(log, 'tombstone-t', tombstoneDecider);
    await write('era_1', ['a']);
    const counted = countStreamReads(log);
    // The stale state says nothing is written: the append conflicts, the retry reads era_1 and writes era_2 after it.
    const second = await handleCommand(
      log,
      'tombstone-t',
      tombstoneDecider,
      { type: 'WriteTombstones', requestId: 'era_2', fingerprints: ['b'] },
      {
        toEventData: tombstoneData,
        from: stale,
      },
    );
    expect(counted.reads()).toBe(1);
    counted.restore();
    expect(second.revision).toBe(1n);
    expect([...second.state.requests]).toEqual(['era_1', 'era_2']);
    // The same stale state for a command already done: the retry finds it done.
    const repeat = await handleCommand(
      log,
      'tombstone-t',
      tombstoneDecider,
      { type: 'WriteTombstones', requestId: 'era_1', fingerprints: ['a'] },
      {
        toEventData: tombstoneData,
        from: stale,
      },
    );
    expect(repeat.events).toEqual([]);
    expect(await count('tombstone-t')).toBe(2);
  });

  it('lets the conflict through once the attempts are used up', async () => {
    const stale = await foldStream(log, 'tombstone-t', tombstoneDecider);
    await write('era_1', ['a']);
    await expect(
      handleCommand(
        log,
        'tombstone-t',
        tombstoneDecider,
        { type: 'WriteTombstones', requestId: 'era_2', fingerprints: ['b'] },
        {
          toEventData: tombstoneData,
          from: stale,
          maxAttempts: 1,
        },
      ),
    ).rejects.toBeInstanceOf(WrongExpectedVersion);
  });

  it('two writers deciding on the same revision both land, one after the other', async () => {
    const toEventData = () => ({ id: crypto.randomUUID(), type: 'PolicyChanged', data: {} });
    const change = () =>
      handleCommand(
        log,
        'policy-t',
        policyDecider,
        { type: 'ChangePolicy', document },
        { toEventData: (e) => ({ ...toEventData(), data: e.data }) },
      );
    const [a, b] = await Promise.all([change(), change()]);
    expect([a.state.policy.version, b.state.policy.version].sort()).toEqual([base + 1, base + 2]);
    expect((await foldStream(log, 'policy-t', policyDecider)).state.policy.version).toBe(base + 2);
  });

  it('passes the decider’s domain errors through and writes nothing', async () => {
    await expect(
      handleCommand(
        log,
        'legalholds-t',
        legalHoldDecider,
        { type: 'ReleaseHold', id: 'hold_x', releasedBy: 'legal-1', releasedAt: '2026-01-01T00:00:00.000Z' },
        {
          toEventData: (e) => ({ id: crypto.randomUUID(), type: e.type, data: e.data }),
        },
      ),
    ).rejects.toBeInstanceOf(LegalHoldNotFound);
    await expect(
      handleCommand(
        log,
        'policy-t',
        policyDecider,
        { type: 'ChangePolicy', document, expectedVersion: 3 },
        {
          toEventData: (e) => ({ id: crypto.randomUUID(), type: e.type, data: e.data }),
        },
      ),
    ).rejects.toBeInstanceOf(PolicyVersionConflict);
    expect(await log.headPosition()).toBe(-1n);
  });
});
