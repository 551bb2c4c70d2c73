import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { streams, SUBJECT_PSEUDONYM } from '@elma/domain';
import { loadConfig, SqliteEventLog } from '@elma/infra';
import { openElma } from './elma';
import { silentLogger } from '@elma/shared';
import { killDuring } from '@elma/shared/testing';

const FIXTURE = join(__dirname, '../../../tests/fixtures/pre-pseudonyms');
const CHILD = new URL('./testing/open.child.ts', import.meta.url);
const SUBJECTS = 4_000;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The fixture plus thousands of legacy subject streams, so the migration takes long enough to be killed inside. */
async function bigLegacyFolder(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'elma-migration-kill-'));
  dirs.push(dir);
  cpSync(FIXTURE, dir, { recursive: true });
  const log = SqliteEventLog.open(join(dir, 'events.db'));
  await log.appendMany(
    Array.from({ length: SUBJECTS }, (_, i) => ({
      stream: `events-acme-load-subject-${i}`,
      events: [0, 1].map((n) => ({ id: `00000000-0000-4000-8000-${String(i * 2 + n).padStart(12, '0')}`, type: 'Test', data: { n } })),
      expectedRevision: 'no_stream' as const,
    })),
  );
  await log.close();
  return dir;
}

function rows(dir: string): { position: number; stream: string; id: string }[] {
  const db = new Database(join(dir, 'events.db'), { readonly: true });
  try {
    return db.prepare('SELECT position, stream, id FROM events ORDER BY position').all() as {
      position: number;
      stream: string;
      id: string;
    }[];
  } finally {
    db.close();
  }
}

/** Where the kill landed: before the vault had pseudonyms, between vault and log, or after the log's transaction. */
function killedState(dir: string, opened: boolean): string {
  const events = new Database(join(dir, 'events.db'), { readonly: true });
  const keys = new Database(join(dir, 'keys.db'), { readonly: true });
  try {
    const layout = events.pragma('user_version', { simple: true });
    const pseudonyms = keys.prepare('SELECT count(*) FROM subject_pseudonyms').pluck().get() as number;
    return `layout ${layout}, ${pseudonyms} pseudonyms in the vault${opened ? ', opened' : ''}`;
  } catch {
    return 'vault not yet initialised';
  } finally {
    events.close();
    keys.close();
  }
}

describe('the pseudonym migration killed with SIGKILL', () => {
  it.each([0, 100, 200, 400, 5_000])(
    'at %i ms leaves a folder that opens, and the next open finishes it',
    async (afterMs) => {
      const dir = await bigLegacyFolder();
      const before = rows(dir);

      const opened = await killDuring(CHILD, [dir], afterMs);
      // Killed before or during the migration, or after it: the same folder either way once opened again.
      if (afterMs === 0) expect(opened).toBe(false);
      console.log(`killed at ${afterMs} ms: ${killedState(dir, opened)}`);

      const elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir, ELMA_PORT: '0' }), { logger: silentLogger });
      try {
        // The open's own witness of the erasure ledger (appended after the migration) is not part of the comparison.
        const after = rows(dir).filter((r) => r.stream !== streams.ledgerWitness);
        // Every event is still there, at its position, under a pseudonym stream that is its subject's.
        expect(after.map((r) => [r.position, r.id])).toEqual(before.map((r) => [r.position, r.id]));
        const legacy = after.filter(
          (r) => r.stream.startsWith('events-') && !SUBJECT_PSEUDONYM.test(r.stream.split('-').slice(2).join('-')),
        );
        expect(legacy).toEqual([]);
        const subjects = [
          ...new Set(before.filter((r) => r.stream.startsWith('events-acme-')).map((r) => r.stream.slice('events-acme-'.length))),
        ];
        const pseudonyms = await elma.vault.subjectPseudonyms('acme', subjects, { create: false });
        expect(pseudonyms.size).toBe(subjects.length);
        before.forEach((r, i) => {
          if (r.stream.startsWith('events-acme-'))
            expect(after[i].stream).toBe(`events-acme-${pseudonyms.get(r.stream.slice('events-acme-'.length))}`);
        });
        expect((await elma.holds.list('acme', { fresh: true }))[0].scope.subjects).toEqual(['fixture-subject-one']);
      } finally {
        await elma.close();
      }
    },
    120_000,
  );
});
