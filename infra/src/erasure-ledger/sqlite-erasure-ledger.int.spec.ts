import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ErasureLedgerUnreadable, type ErasureLedgerEntry } from '@elma/domain';
import { SqliteErasureLedger } from './sqlite-erasure-ledger';

const entry = (requestId: string): ErasureLedgerEntry => ({
  formatVersion: 1,
  tenant: 'acme',
  requestId,
  completedAt: '2026-12-01T10:00:00.000Z',
  recordIds: ['r-1', 'r-2'],
  eventIds: ['e-1'],
  deletedStreams: ['events-acme-ps_0123'],
  forgottenPseudonyms: ['ps_0123'],
  tombstones: ['a'.repeat(64)],
  certificate: { keyId: 'k1', signature: 'c2ln' },
});

describe('SqliteErasureLedger', () => {
  const dirs: string[] = [];
  const pathIn = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-ledger-'));
    dirs.push(dir);
    return join(dir, 'erasure-ledger.db');
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps entries across reopenings, once per request, in order, with the same identity', async () => {
    const path = pathIn();
    const ledger = SqliteErasureLedger.open(path);
    await ledger.record(entry('q-1'));
    await ledger.record(entry('q-2'));
    await ledger.record({ ...entry('q-1'), recordIds: ['other'] });
    const id = ledger.id;
    await ledger.close();

    const reopened = SqliteErasureLedger.open(path);
    expect(reopened.id).toBe(id);
    expect(await reopened.head()).toBe(2);
    expect((await reopened.entries(0)).map((e) => [e.seq, e.entry.requestId, e.entry.recordIds])).toEqual([
      [1, 'q-1', ['r-1', 'r-2']],
      [2, 'q-2', ['r-1', 'r-2']],
    ]);
    expect((await reopened.entries(1)).map((e) => e.entry.requestId)).toEqual(['q-2']);
    await reopened.close();
  });

  it('marks a re-application only backwards, and clears it once done unless moved back meanwhile', async () => {
    const ledger = SqliteErasureLedger.open(pathIn());
    expect(await ledger.pendingReapply()).toBeUndefined();
    await ledger.requireReapply(5);
    await ledger.requireReapply(7);
    expect(await ledger.pendingReapply()).toBe(5);
    await ledger.requireReapply(2);
    await ledger.reapplied(5); // a re-application that started from 5 does not clear a restore to 2
    expect(await ledger.pendingReapply()).toBe(2);
    await ledger.reapplied(2);
    expect(await ledger.pendingReapply()).toBeUndefined();
    await ledger.close();
  });

  it('refuses an entry altered by hand, naming the entry and never its content', async () => {
    const path = pathIn();
    const ledger = SqliteErasureLedger.open(path);
    await ledger.record(entry('q-1'));
    await ledger.close();
    const db = new Database(path);
    db.prepare(`UPDATE erasures SET entry = replace(entry, 'r-2', 'r-3')`).run();
    db.close();
    expect(() => SqliteErasureLedger.open(path)).toThrow(ErasureLedgerUnreadable);
    expect(() => SqliteErasureLedger.open(path)).toThrow(/entry 1 does not match its checksum/);
  });

  it('refuses a file that is not a ledger, or of a version it does not read', async () => {
    const garbage = pathIn();
    writeFileSync(garbage, Buffer.alloc(8192, 0x41));
    expect(() => SqliteErasureLedger.open(garbage)).toThrow(expect.objectContaining({ code: 'ERASURE_LEDGER.UNREADABLE' }));

    const newer = pathIn();
    (await SqliteErasureLedger.open(newer)).close();
    const db = new Database(newer);
    db.prepare(`UPDATE ledger_meta SET value = '99' WHERE key = 'formatVersion'`).run();
    db.close();
    expect(() => SqliteErasureLedger.open(newer)).toThrow(/format version 99/);
  });

  it('refuses a file truncated in the middle', async () => {
    const path = pathIn();
    const ledger = SqliteErasureLedger.open(path);
    for (let i = 0; i < 60; i++) await ledger.record(entry(`q-${i}`));
    await ledger.close();
    const bytes = readFileSync(path);
    writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
    expect(() => SqliteErasureLedger.open(path)).toThrow(ErasureLedgerUnreadable);
  });

  it('stores ids, pseudonyms and fingerprints only', async () => {
    const path = pathIn();
    const ledger = SqliteErasureLedger.open(path);
    await expect(ledger.record({ ...entry('q-1'), text: 'secret' } as unknown as ErasureLedgerEntry)).rejects.toThrow();
    await ledger.close();
  });
});
