import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { ErasureLedgerUnreadable, type ErasureLedgerEntry, type TenantOffboardingLedgerEntry } from '@elma/domain';
import { SqliteErasureLedger } from './sqlite-erasure-ledger';
import { attestedLedger } from './attested-ledger.testing';
import { CertificateSigner } from '../certificate/signing';
import { ledgerHeadSigner } from '../certificate/ledger-head';

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

const offboarding = (requestId: string): TenantOffboardingLedgerEntry => ({
  formatVersion: 1,
  kind: 'tenant-offboarding',
  tenant: 'initech',
  requestId,
  completedAt: '2026-12-02T10:00:00.000Z',
  certificate: { keyId: 'k1', signature: 'b2Zm' },
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
    const ledger = await attestedLedger(path);
    await ledger.record(entry('q-1'));
    await ledger.record(entry('q-2'));
    await ledger.record({ ...entry('q-1'), recordIds: ['other'] });
    const id = ledger.id;
    await ledger.close();

    const reopened = await attestedLedger(path);
    expect(reopened.id).toBe(id);
    expect(await reopened.head()).toBe(2);
    expect((await reopened.entries(0)).map((e) => [e.seq, e.entry.requestId, 'recordIds' in e.entry ? e.entry.recordIds : null])).toEqual([
      [1, 'q-1', ['r-1', 'r-2']],
      [2, 'q-2', ['r-1', 'r-2']],
    ]);
    expect((await reopened.entries(1)).map((e) => e.entry.requestId)).toEqual(['q-2']);
    await reopened.close();
  });

  it('marks a re-application only backwards, and clears it once done unless moved back meanwhile', async () => {
    const ledger = await attestedLedger(pathIn());
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
    const ledger = await attestedLedger(path);
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
    const ledger = await attestedLedger(path);
    for (let i = 0; i < 60; i++) await ledger.record(entry(`q-${i}`));
    await ledger.close();
    const bytes = readFileSync(path);
    writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
    expect(() => SqliteErasureLedger.open(path)).toThrow(ErasureLedgerUnreadable);
  });

  it('stores ids, pseudonyms and fingerprints only', async () => {
    const path = pathIn();
    const ledger = await attestedLedger(path);
    await expect(ledger.record({ ...entry('q-1'), text: 'secret' } as unknown as ErasureLedgerEntry)).rejects.toThrow();
    await ledger.close();
  });

  it('opens a ledger written before tenant off-boardings were recorded, and adds one to it', async () => {
    // The file exactly as the first ledger (erasures only) wrote it: schema, identity, format version 1, one row.
    const path = pathIn();
    const old = new Database(path);
    old.exec(`
      CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE erasures (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, request_id TEXT NOT NULL,
        entry TEXT NOT NULL, sha256 TEXT NOT NULL, UNIQUE (tenant, request_id));
      INSERT INTO ledger_meta (key, value) VALUES ('id', 'ledger-of-v1'), ('formatVersion', '1');
    `);
    const json = JSON.stringify(entry('q-old'));
    old
      .prepare('INSERT INTO erasures (tenant, request_id, entry, sha256) VALUES (?, ?, ?, ?)')
      .run('acme', 'q-old', json, createHash('sha256').update(json, 'utf8').digest('hex'));
    old.close();

    const ledger = await attestedLedger(path);
    expect(ledger.id).toBe('ledger-of-v1');
    expect((await ledger.entries(0)).map((e) => e.entry)).toEqual([entry('q-old')]);
    await ledger.record(offboarding('off_1'));
    await ledger.record({ ...offboarding('off_1'), completedAt: '2026-12-03T10:00:00.000Z' });
    await ledger.close();

    const reopened = await attestedLedger(path);
    expect((await reopened.entries(0)).map((e) => [e.seq, e.entry])).toEqual([
      [1, entry('q-old')],
      [2, offboarding('off_1')],
    ]);
    await reopened.close();
    // The erasure row is stored as it was (no `kind`): a ledger of erasures reads the same to either shape.
    const raw = new Database(path, { readonly: true });
    expect((raw.prepare('SELECT entry FROM erasures WHERE seq = 1').get() as { entry: string }).entry).toBe(json);
    expect(raw.prepare(`SELECT value FROM ledger_meta WHERE key = 'formatVersion'`).pluck().get()).toBe('1');
    raw.close();
  });

  it('keeps a tenant off-boarding to ids and the signature, and refuses a row that mixes the two kinds', async () => {
    const path = pathIn();
    const ledger = await attestedLedger(path);
    const withContent = { ...offboarding('off_2'), texts: ['secret'] } as unknown as TenantOffboardingLedgerEntry;
    await expect(ledger.record(withContent)).rejects.toThrow();
    const mixed = { ...entry('q-9'), kind: 'tenant-offboarding' } as unknown as ErasureLedgerEntry;
    await expect(ledger.record(mixed)).rejects.toThrow();
    await ledger.close();
    // Written by hand with a valid checksum: still refused when the ledger is opened.
    const db = new Database(path);
    const json = JSON.stringify({ ...offboarding('off_3'), kind: 'tenant-erasure' });
    db.prepare('INSERT INTO erasures (tenant, request_id, entry, sha256) VALUES (?, ?, ?, ?)').run(
      'initech',
      'off_3',
      json,
      createHash('sha256').update(json, 'utf8').digest('hex'),
    );
    db.close();
    expect(() => SqliteErasureLedger.open(path)).toThrow(/entry 1 is not a ledger entry/);
  });

  it('refuses, once attested, an entry rewritten with its checksum by someone without the signing key, and a removed head', async () => {
    const path = pathIn();
    const ledger = await attestedLedger(path);
    await ledger.record(entry('q-1'));
    await ledger.close();
    const altered = JSON.stringify({ ...entry('q-1'), recordIds: ['someone-else'] });
    const db = new Database(path);
    db.prepare('UPDATE erasures SET entry = ?, sha256 = ? WHERE seq = 1').run(
      altered,
      createHash('sha256').update(altered, 'utf8').digest('hex'),
    );
    db.close();
    // Its checksum holds: only the signed head can tell.
    await expect(attestedLedger(path)).rejects.toThrow(/signed head names 1 entries and it holds 1, or other ones/);

    const headless = pathIn();
    await (await attestedLedger(headless)).close();
    const stripped = new Database(headless);
    stripped.prepare(`DELETE FROM ledger_meta WHERE key = 'signedHead'`).run();
    stripped.close();
    const reopened = SqliteErasureLedger.open(headless);
    const signer = ledgerHeadSigner(new CertificateSigner({ masterKey: new Uint8Array(32).fill(7) }));
    await expect(reopened.attest(signer, { mustBeSigned: true })).rejects.toThrow(/signed head is missing/);
    await reopened.attest(signer, { resign: true });
    expect(reopened.signedHead()?.head.seq).toBe(0);
    await reopened.close();
  });
});
