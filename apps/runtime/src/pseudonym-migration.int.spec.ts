import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SUBJECT_PSEUDONYM, streams } from '@elma/domain';
import { loadConfig, SqliteEventLog, SqliteKeyVault } from '@elma/infra';
import { ErasureStore, EventSealer } from '@elma/application';
import { openElma } from './elma';
import { silentLogger } from '@elma/shared';
import { migrateByCopy, migrateToPseudonyms, MIGRATION_STREAM } from './pseudonym-migration';

/**
 * `tests/fixtures/pre-pseudonyms` was written by the code before pseudonyms
 * (see its README): acme has `fixture-subject-one` (two events, under a
 * legal hold) and `夹具客户二`, globex has `fixture-subject-three`.
 */
const FIXTURE = join(__dirname, '../../../tests/fixtures/pre-pseudonyms');
const SUBJECTS = { acme: ['fixture-subject-one', '夹具客户二'], globex: ['fixture-subject-three'] };
const ALL_SUBJECTS = [...SUBJECTS.acme, ...SUBJECTS.globex];

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function copyOfFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'elma-migration-'));
  dirs.push(dir);
  cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

interface Row {
  position: number;
  stream: string;
  id: string;
  data: string;
}

function rows(dir: string): Row[] {
  const db = new Database(join(dir, 'events.db'), { readonly: true });
  try {
    return db.prepare('SELECT position, stream, id, data FROM events ORDER BY position').all() as Row[];
  } finally {
    db.close();
  }
}

const open = (dir: string) =>
  openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_PORT: '0' }), { logger: silentLogger });
const rawOpen = (dir: string) => ({
  log: SqliteEventLog.open(join(dir, 'events.db')),
  vault: new SqliteKeyVault({
    path: join(dir, 'keys.db'),
    masterKey: loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_PORT: '0' }).masterKey,
  }),
});

describe('a data folder made before subject pseudonyms', () => {
  it('is migrated on open: streams by pseudonym, holds by pseudonym, positions and ids kept, nothing else touched', async () => {
    const dir = copyOfFixture();
    const before = rows(dir);
    expect(before.some((r) => r.stream === 'events-acme-fixture-subject-one')).toBe(true);

    const elma = await open(dir);
    try {
      const pseudonyms = await elma.vault.subjectPseudonyms('acme', SUBJECTS.acme, { create: false });
      expect([...pseudonyms.values()].every((p) => SUBJECT_PSEUDONYM.test(p))).toBe(true);
      // The open's own witness of the erasure ledger (appended after the migration) is not part of the comparison.
      const after = rows(dir).filter((r) => r.stream !== streams.ledgerWitness);
      // Same events at the same positions with the same ids; only event streams and the hold stream changed names.
      expect(after.map((r) => [r.position, r.id])).toEqual(before.map((r) => [r.position, r.id]));
      const renamed = new Map(before.map((r, i) => [r.stream, after[i].stream]));
      expect(renamed.get('events-acme-fixture-subject-one')).toBe(streams.events('acme', pseudonyms.get('fixture-subject-one')!));
      expect(renamed.get('events-acme-夹具客户二')).toBe(streams.events('acme', pseudonyms.get('夹具客户二')!));
      expect(renamed.get('legalhold-acme')).toBe('legalholds-acme');
      for (const [from, to] of renamed) if (!from.startsWith('events-') && !from.startsWith('legalhold-')) expect(to).toBe(from);
      // No stream name and no hold names a subject.
      for (const subject of ALL_SUBJECTS) {
        expect(after.filter((r) => r.stream.includes(subject))).toEqual([]);
        expect(after.filter((r) => r.stream.startsWith('legalholds-') && r.data.includes(subject))).toEqual([]);
      }
      // The hold still covers its subject, read back through the vault.
      const [hold] = await elma.holds.list('acme', { fresh: true });
      expect(hold.scope.subjects).toEqual(['fixture-subject-one']);
      // A new write of a migrated subject goes to its migrated stream.
      await elma.ingest.ingest(
        { tenant: 'acme', sub: 'agent', roles: ['agent'], purposes: ['support'], clearance: 'internal' },
        {
          subject: 'fixture-subject-one',
          occurredAt: '2026-11-29T10:00:00Z',
          activity: 'chat.turn',
          content: { text: 'one more note after the upgrade' },
          source: { system: 'crm', channel: 'chat' },
        },
      );
      expect(rows(dir).filter((r) => r.stream === renamed.get('events-acme-fixture-subject-one'))).toHaveLength(3);
    } finally {
      await elma.close();
    }

    // Re-opening changes nothing.
    const again = rows(dir);
    const reopened = await open(dir);
    await reopened.close();
    expect(rows(dir)).toEqual(again);
  });

  it('leaves no old name or held subject in the log file’s bytes, and no subject id in the vault file', async () => {
    const dir = copyOfFixture();
    // Files older than the fixture listed deleted streams by name: an erased subject's stream, and a record's.
    const raw = new Database(join(dir, 'events.db'));
    raw.prepare('INSERT INTO deleted_streams (stream) VALUES (?), (?)').run('events-acme-erased-before-upgrade', 'memory-acme-mem_ep_old');
    raw.close();
    const elma = await open(dir);
    await elma.close();
    const db = new Database(join(dir, 'events.db'), { readonly: true });
    const names = db.prepare('SELECT DISTINCT stream FROM events UNION SELECT stream FROM deleted_streams').pluck().all() as string[];
    db.close();
    for (const subject of [...ALL_SUBJECTS, 'erased-before-upgrade']) expect(names.filter((n) => n.includes(subject))).toEqual([]);
    expect(names).toContain('memory-acme-mem_ep_old');
    // Byte level: the old names and the hold's subjects are overwritten, not just unlinked (secure_delete, WAL truncated).
    const logBytes = Buffer.concat([join(dir, 'events.db'), join(dir, 'events.db-wal')].filter(existsSync).map((p) => readFileSync(p)));
    for (const old of [
      'events-acme-fixture-subject-one',
      'events-acme-夹具客户二',
      'events-globex-fixture-subject-three',
      '"subjects":["fixture-subject-one"]',
    ]) {
      expect(logBytes.includes(Buffer.from(old)), old).toBe(false);
    }
    const vaultBytes = readFileSync(join(dir, 'keys.db'));
    for (const subject of ALL_SUBJECTS) expect(vaultBytes.includes(Buffer.from(subject))).toBe(false);
  });

  it('a migration that fails half way leaves the old layout whole, and the next open finishes it with the same pseudonyms', async () => {
    const dir = copyOfFixture();
    const before = rows(dir);
    const { log, vault } = rawOpen(dir);
    // Crash point 1: the vault already holds pseudonyms (its own file), the log is untouched.
    const early = await vault.subjectPseudonyms('acme', ['fixture-subject-one'], { create: true });
    // Crash point 2: the log's transaction fails after some renames.
    await expect(
      log.migrateLayout(1, () => ({
        renames: [
          ['events-acme-fixture-subject-one', 'events-acme-renamed'],
          ['events-acme-夹具客户二', 'events-acme-renamed'],
        ],
        rewrites: [],
        forgetDeleted: [],
      })),
    ).rejects.toThrow();
    expect(log.layoutVersion()).toBe(0);
    await log.close();
    await vault.close();
    expect(rows(dir)).toEqual(before);

    const elma = await open(dir);
    try {
      expect((await elma.vault.subjectPseudonyms('acme', ['fixture-subject-one'], { create: false })).get('fixture-subject-one')).toBe(
        early.get('fixture-subject-one'),
      );
      expect(
        rows(dir).filter((r) => r.stream.startsWith('events-') && !SUBJECT_PSEUDONYM.test(r.stream.split('-').slice(2).join('-'))),
      ).toEqual([]);
    } finally {
      await elma.close();
    }
  });

  it('an erasure whose workset was captured before the migration deletes the subject’s stream under its new name', async () => {
    const dir = copyOfFixture();
    const legacyStream = 'events-acme-夹具客户二';
    const [legacy] = rows(dir).filter((r) => r.stream === legacyStream);
    // Captured by the old code: the workset names the stream by the subject's id.
    const raw = rawOpen(dir);
    const store = new ErasureStore({ log: raw.log, sealer: new EventSealer(raw.vault) });
    await store.create(
      {
        requestId: 'era_inflight',
        tenant: 'acme',
        reason: 'subject_request',
        requestedBy: { sub: 'dpo-1', roles: ['dpo'], clearance: 'restricted' },
        requestedAt: '2026-12-01T00:00:00Z',
      },
      { type: 'subject', subject: '夹具客户二' },
    );
    await store.saveWorkset(await store.load('acme', 'era_inflight'), {
      records: [],
      eventStreams: { [legacy.id]: legacyStream },
    });
    await raw.log.close();
    await raw.vault.close();

    const elma = await open(dir);
    try {
      const pseudonym = (await elma.vault.subjectPseudonyms('acme', ['夹具客户二'], { create: false })).get('夹具客户二')!;
      expect(rows(dir).filter((r) => r.stream === streams.events('acme', pseudonym))).toHaveLength(1);
      const result = await elma.erasure.steps.deleteStreams(
        'acme',
        'era_inflight',
        { recordIds: [], eventIds: [legacy.id] },
        { attempt: 1, startedAt: new Date().toISOString() },
      );
      expect(result.deleted).toBe(1);
      expect(rows(dir).filter((r) => r.stream === streams.events('acme', pseudonym))).toEqual([]);
    } finally {
      await elma.close();
    }
  });

  it('by copy and delete (the EventStoreDB way): resumes a partial copy without duplicates and marks the end', async () => {
    const dir = copyOfFixture();
    const before = rows(dir);
    const { log, vault } = rawOpen(dir);
    try {
      // A previous run died after copying the first event of one stream.
      const pseudonym = (await vault.subjectPseudonyms('acme', ['fixture-subject-one'], { create: true })).get('fixture-subject-one')!;
      const [first] = before.filter((r) => r.stream === 'events-acme-fixture-subject-one');
      const [stored] = await collect(log.readStream('events-acme-fixture-subject-one', { maxCount: 1 }));
      await log.append(
        streams.events('acme', pseudonym),
        [{ id: first.id, type: stored.type, data: stored.data, metadata: stored.metadata }],
        {
          expectedRevision: 'no_stream',
        },
      );

      expect(await migrateByCopy(log, vault)).toEqual({ streams: 3, holds: 1 });

      const moved = await collect(log.readStream(streams.events('acme', pseudonym)));
      expect(moved.map((e) => e.id)).toEqual(before.filter((r) => r.stream === 'events-acme-fixture-subject-one').map((r) => r.id));
      expect(await collect(log.readStream('events-acme-fixture-subject-one'))).toEqual([]);
      const holds = await collect(log.readStream('legalholds-acme'));
      expect(JSON.stringify(holds.map((e) => e.data))).not.toContain('fixture-subject-one');
      expect(holds[0].data).toMatchObject({ scope: { subjectPseudonyms: [pseudonym] } });
      expect(await collect(log.readStream('legalhold-acme'))).toEqual([]);
      expect(await collect(log.readStream(MIGRATION_STREAM))).toHaveLength(1);
      // Done once: a second run finds the mark.
      expect(await migrateByCopy(log, vault)).toEqual({ streams: 0, holds: 0 });
      // On SQLite the open-time path finds nothing left to rename either.
      expect(await migrateToPseudonyms(log, vault)).toEqual({ streams: 0, holds: 0 });
    } finally {
      await log.close();
      await vault.close();
    }
  });
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
