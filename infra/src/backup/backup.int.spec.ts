import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { BackupManifest } from '@elma/domain';
import { SqliteTokenRevocations } from '../auth/revocations';
import { SqliteErasureLedger } from '../erasure-ledger/sqlite-erasure-ledger';
import { claimDataDir } from '../files/data-dir-owner';
import { backupDataDir, restoreDataDir, verifyBackup } from './backup';
import { attestedLedger } from '../erasure-ledger/attested-ledger.testing';

/** A data folder as ELMA leaves it: WAL databases, graphs, secrets, process files, the ledger. */
function dataFolder(root: string): string {
  const dir = join(root, 'data');
  mkdirSync(join(dir, 'index'), { recursive: true });
  const wal = (path: string, sql: string) => {
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec(sql);
    return db;
  };
  wal(
    join(dir, 'events.db'),
    `CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT);
    INSERT INTO events (data) VALUES ('one'), ('two'), ('three');`,
  ).close();
  wal(join(dir, 'keys.db'), `CREATE TABLE keys (id TEXT); INSERT INTO keys VALUES ('k1');`).close();
  wal(
    join(dir, 'index', 'meta.db'),
    `CREATE TABLE checkpoints (name TEXT, position INTEGER); INSERT INTO checkpoints VALUES ('views', 3);`,
  ).close();
  wal(join(dir, 'index', 'tenant-acme.db'), `CREATE TABLE memories (id TEXT); INSERT INTO memories VALUES ('m1');`).close();
  writeFileSync(join(dir, 'index', 'tenant-acme.usearch'), 'graph');
  writeFileSync(join(dir, 'master.key'), 'aa'.repeat(32));
  writeFileSync(join(dir, 'jwt.secret'), 'bb'.repeat(32));
  writeFileSync(join(dir, 'owner.json'), '{}');
  writeFileSync(join(dir, 'temporal.db'), 'temporal');
  return dir;
}

const rows = (path: string, sql: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).all();
  } finally {
    db.close();
  }
};

describe('backupDataDir / restoreDataDir', () => {
  const roots: string[] = [];
  const newRoot = () => {
    const root = mkdtempSync(join(tmpdir(), 'elma-backup-'));
    roots.push(root);
    return root;
  };
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const options = (dataDir: string, to: string, includeSecrets = false) => ({
    dataDir,
    to,
    ledgerPath: join(dataDir, 'erasure-ledger.db'),
    includeSecrets,
    elmaVersion: '0.1.0',
  });

  it('copies the engines in a consistent order, with checksums, and leaves process state, graphs, the ledger and secrets out', async () => {
    const root = newRoot();
    const dataDir = dataFolder(root);
    const ledger = await attestedLedger(join(dataDir, 'erasure-ledger.db'));
    const ledgerId = ledger.id;
    await ledger.close();
    claimDataDir(dataDir, { command: 'elma start', ports: {} }); // ELMA runs: backup does not need the folder

    const { manifest, skipped } = await backupDataDir(options(dataDir, join(root, 'b')));
    expect(manifest.files.map((f) => f.path)).toEqual(['index/meta.db', 'index/tenant-acme.db', 'events.db', 'keys.db']);
    expect(manifest).toMatchObject({ eventLogPosition: '3', ledger: { id: ledgerId, head: 0 }, secrets: false });
    expect(manifest.rebuiltOnStart).toHaveLength(1);
    expect(skipped).toEqual(
      expect.arrayContaining(['erasure-ledger.db', 'index/tenant-acme.usearch', 'jwt.secret', 'master.key', 'owner.lock', 'temporal.db']),
    );
    expect(BackupManifest.parse(JSON.parse(readFileSync(join(root, 'b', 'manifest.json'), 'utf8')))).toEqual(manifest);
    expect(await verifyBackup(join(root, 'b'))).toEqual(manifest);
    expect(rows(join(root, 'b', 'events.db'), 'SELECT data FROM events')).toHaveLength(3);

    const withSecrets = await backupDataDir(options(dataDir, join(root, 'c'), true));
    expect(withSecrets.manifest.secrets).toBe(true);
    expect(withSecrets.manifest.files.map((f) => f.path)).toContain('master.key');
  });

  it('copies what is committed, not what a writer holds open', async () => {
    const root = newRoot();
    const dataDir = dataFolder(root);
    const writer = new Database(join(dataDir, 'events.db'));
    writer.exec(`BEGIN IMMEDIATE; INSERT INTO events (data) VALUES ('uncommitted');`);
    try {
      const { manifest } = await backupDataDir(options(dataDir, join(root, 'b')));
      expect(manifest.eventLogPosition).toBe('3');
    } finally {
      writer.exec('ROLLBACK');
      writer.close();
    }
  });

  it('refuses a backup folder that is not empty, or inside the data folder', async () => {
    const root = newRoot();
    const dataDir = dataFolder(root);
    mkdirSync(join(root, 'full'));
    writeFileSync(join(root, 'full', 'x'), 'x');
    await expect(backupDataDir(options(dataDir, join(root, 'full')))).rejects.toMatchObject({
      code: 'BACKUP.REFUSED',
      message: expect.stringMatching(/^backup refused: .* not empty/),
    });
    await expect(backupDataDir(options(dataDir, join(dataDir, 'b')))).rejects.toMatchObject({
      code: 'BACKUP.REFUSED',
      message: expect.stringMatching(/outside the data folder/),
    });
  });

  it('restores into a stopped folder, keeps the ledger and marks the entries recorded after the backup', async () => {
    const root = newRoot();
    const dataDir = dataFolder(root);
    const ledgerPath = join(dataDir, 'erasure-ledger.db');
    const ledger = await attestedLedger(ledgerPath);
    const entry = (requestId: string) => ({
      formatVersion: 1 as const,
      tenant: 'acme',
      requestId,
      completedAt: '2026-12-01T10:00:00.000Z',
      recordIds: ['m1'],
      eventIds: [],
      deletedStreams: [],
      forgottenPseudonyms: [],
      tombstones: [],
      certificate: { keyId: 'k', signature: 's' },
    });
    await ledger.record(entry('before'));
    await ledger.close();
    await backupDataDir(options(dataDir, join(root, 'b')));
    // After the backup: new data, and an erasure recorded in the ledger.
    const db = new Database(join(dataDir, 'events.db'));
    db.exec(`INSERT INTO events (data) VALUES ('four')`);
    db.close();
    const after = await attestedLedger(ledgerPath);
    await after.record(entry('after'));
    await after.close();

    const result = await restoreDataDir({ from: join(root, 'b'), dataDir, ledgerPath, withoutLedger: false });
    expect(result.reapply).toEqual({ after: 1, entries: 1, offboardings: 0 });
    expect(rows(join(dataDir, 'events.db'), 'SELECT data FROM events')).toHaveLength(3);
    expect(existsSync(join(dataDir, 'index', 'tenant-acme.usearch'))).toBe(false);
    expect(existsSync(join(dataDir, 'temporal.db'))).toBe(true);
    const reopened = await attestedLedger(ledgerPath);
    expect(await reopened.head()).toBe(2);
    expect(await reopened.pendingReapply()).toBe(1);
    await reopened.close();
    expect(existsSync(join(dataDir, '.restore-in-progress'))).toBe(false);
  });

  it('keeps the tokens revoked after the backup revoked: the deny list is carried forward, not rolled back', async () => {
    const root = newRoot();
    const dataDir = dataFolder(root);
    const ledgerPath = join(dataDir, 'erasure-ledger.db');
    await SqliteErasureLedger.open(ledgerPath).close();
    const now = 1_800_000_000;
    let tokens = new SqliteTokenRevocations(join(dataDir, 'tokens.db'));
    tokens.revoke('acme', 'before-backup', now + 3600, now);
    tokens.close();
    await backupDataDir(options(dataDir, join(root, 'b')));
    tokens = new SqliteTokenRevocations(join(dataDir, 'tokens.db'));
    tokens.revoke('acme', 'after-backup', now + 3600, now);
    tokens.revoke('acme', 'before-backup', now + 7200, now);
    tokens.close();

    await restoreDataDir({ from: join(root, 'b'), dataDir, ledgerPath, withoutLedger: false });
    tokens = new SqliteTokenRevocations(join(dataDir, 'tokens.db'));
    try {
      expect(tokens.isRevoked('acme', 'before-backup', now + 5000)).toBe(true);
      expect(tokens.isRevoked('acme', 'after-backup', now + 10)).toBe(true);
      expect(tokens.isRevoked('acme', 'never-revoked', now + 10)).toBe(false);
    } finally {
      tokens.close();
    }
  });

  it('refuses, changing nothing: a folder in use, no ledger, another master key, a forbidden or altered file', async () => {
    const root = newRoot();
    const dataDir = dataFolder(root);
    const ledgerPath = join(dataDir, 'erasure-ledger.db');
    await backupDataDir(options(dataDir, join(root, 'b'), true));
    const restore = (from = join(root, 'b'), withoutLedger = false) => restoreDataDir({ from, dataDir, ledgerPath, withoutLedger });
    const before = readFileSync(join(dataDir, 'events.db'));

    await expect(restore()).rejects.toMatchObject({
      code: 'BACKUP.RESTORE_REFUSED',
      message: expect.stringContaining('no erasure ledger'),
    });

    (await SqliteErasureLedger.open(ledgerPath)).close();
    const owner = claimDataDir(dataDir, { command: 'elma start', ports: { api: 9321 } });
    await expect(restore()).rejects.toMatchObject({ code: 'DATA_DIR.IN_USE' });
    owner.release();

    writeFileSync(join(dataDir, 'master.key'), 'cc'.repeat(32));
    await expect(restore()).rejects.toThrow(/differs from the backup's master key/);
    writeFileSync(join(dataDir, 'master.key'), 'aa'.repeat(32));

    const manifestPath = join(root, 'b', 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as BackupManifest;
    writeFileSync(
      manifestPath,
      JSON.stringify({ ...manifest, files: [...manifest.files, { path: 'erasure-ledger.db', bytes: 0, sha256: '0'.repeat(64) }] }),
    );
    await expect(restore()).rejects.toMatchObject({ code: 'BACKUP.INVALID' });
    writeFileSync(
      manifestPath,
      JSON.stringify({ ...manifest, files: [...manifest.files, { path: '../escape.db', bytes: 0, sha256: '0'.repeat(64) }] }),
    );
    await expect(restore()).rejects.toMatchObject({ code: 'BACKUP.INVALID' });
    writeFileSync(manifestPath, JSON.stringify(manifest));
    writeFileSync(join(root, 'b', 'keys.db'), 'altered');
    await expect(restore()).rejects.toThrow(/keys.db does not match its checksum/);

    expect(readFileSync(join(dataDir, 'events.db')).equals(before)).toBe(true);
  });
});
