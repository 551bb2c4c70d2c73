import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS } from '@elma/domain';
import { killDuring } from '@elma/shared/testing';
import { SqliteEventLog } from './sqlite-event-log';
import { createLegacyEventTables } from './testing/legacy-layout';

const CHILD = new URL('./testing/open-log.child.ts', import.meta.url);
/** Enough events that the conversion takes seconds, so a kill lands inside it. */
const EVENTS = 300_000;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** An `events.db` in the layout before the streams table, written by hand: names in every row, ids as text. */
function legacyLog(): string {
  const dir = mkdtempSync(join(tmpdir(), 'elma-log-convert-kill-'));
  dirs.push(dir);
  const path = join(dir, 'events.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  const insert = createLegacyEventTables(db);
  const revisions = new Map<string, number>();
  db.transaction(() => {
    for (let i = 0; i < EVENTS; i++) {
      // A new stream for two of every three events, as ingestion writes them.
      const stream = i % 3 === 0 ? `events-acme-subject-${i % 300}` : `memory-acme-${randomUUID()}`;
      const revision = revisions.get(stream) ?? 0;
      revisions.set(stream, revision + 1);
      insert.run(stream, revision, randomUUID(), 'Noted', JSON.stringify({ i }), '{}', 1_700_000_000_000 + i);
    }
  })();
  db.pragma('user_version = 1');
  db.close();
  return path;
}

/** Every event as the `events` table or view shows it, and the position counter. */
function snapshot(path: string): { events: string; counter: number } {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT position, stream, revision, id, data FROM events ORDER BY position').raw().all() as unknown[][];
    const counter = db.prepare("SELECT max(seq) FROM sqlite_sequence WHERE name IN ('events', 'event_rows')").pluck().get() as number;
    return { events: rows.map((row) => row.join('|')).join('\n'), counter };
  } finally {
    db.close();
  }
}

describe('converting the event log to the streams table, killed with SIGKILL', () => {
  it.each([300, 1_500, 60_000])(
    'at %i ms leaves the old layout whole or the new one complete, and the next open serves every event',
    async (afterMs) => {
      const path = legacyLog();
      const before = snapshot(path);

      const opened = await killDuring(CHILD, [path], afterMs);
      const raw = new Database(path, { readonly: true });
      const kind = raw.prepare("SELECT type FROM sqlite_master WHERE name = 'events'").pluck().get();
      raw.close();
      console.log(`killed at ${afterMs} ms: events is a ${kind}${opened ? ', opened' : ''}`);
      // The early kills land inside the conversion (it takes seconds): the old table is left whole. The late one finds it done.
      expect(opened).toBe(afterMs > 5_000);
      expect(kind).toBe(opened ? 'view' : 'table');
      expect(snapshot(path)).toEqual(before);

      const log = SqliteEventLog.open(path);
      try {
        expect(snapshot(path)).toEqual(before);
        expect(log.layoutVersion()).toBe(FORMAT_VERSIONS.eventLog);
        expect(await log.headPosition()).toBe(BigInt(EVENTS));
        const next = await log.append('memory-acme-after', [{ id: randomUUID(), type: 'Noted', data: {} }], {
          expectedRevision: 'no_stream',
        });
        expect(next.position).toBe(BigInt(EVENTS + 1));
      } finally {
        await log.close();
      }
    },
    180_000,
  );
});
