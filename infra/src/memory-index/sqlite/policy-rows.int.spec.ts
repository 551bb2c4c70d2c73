import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONVERSATION_GAP_MS, DEFAULT_TEXT_ANALYSIS, type IndexFilter, type MemoryRecord } from '@elma/domain';
import { makeRecord } from '@elma/domain/testing';
import { DAY, IDS, indexFilter, record } from '../arbitraries.testing';
import { embed } from '../fixtures';
import { compileFilter } from './filter-sql';
import { TenantPartition } from './tenant-partition';

const QUERY = 'customer email';

/** A partition in a fresh folder, and a second, read-only connection to its file for the SQL reference. */
function scratchPartition() {
  const dir = mkdtempSync(join(tmpdir(), 'elma-policy-rows-'));
  const files = { db: join(dir, 'tenant.db'), graph: join(dir, 'tenant.usearch') };
  const partition = new TenantPartition(files, {
    tenant: 'tenant-a',
    dimensions: 384,
    model: 'unnamed',
    persistEveryRows: 1_000,
    text: DEFAULT_TEXT_ANALYSIS,
  });
  const reference = new Database(files.db, { readonly: true });
  return {
    partition,
    /** The rowids the SQL filter admits, read from the file: what the in-memory check must agree with. */
    admittedBySql(filter: IndexFilter): number[] | undefined {
      const sql = compileFilter(filter);
      if (!sql) return undefined;
      return (
        reference
          .prepare(`SELECT m.rowid FROM memories m WHERE ${sql.where}`)
          .pluck()
          .all(...sql.params) as number[]
      ).sort();
    },
    /**
     * `neighbours` worked out from the file by its definition: for each id the newest admitted episodic
     * version, and the admitted turns of its conversation just before and after it in (valid time, rowid)
     * order, within CONVERSATION_GAP_MS of it when neither has a session.
     */
    neighboursBySql(ids: string[], filter: IndexFilter) {
      const sql = compileFilter(filter)!;
      const admitted = new Set(
        reference
          .prepare(`SELECT m.rowid FROM memories m WHERE ${sql.where}`)
          .pluck()
          .all(...sql.params) as number[],
      );
      const turns = (
        reference.prepare(`SELECT rowid, id, subject, session, valid_from AS at FROM memories WHERE kind = 'episodic'`).all() as {
          rowid: number;
          id: string;
          subject: string | null;
          session: string | null;
          at: number;
        }[]
      )
        .filter((t) => admitted.has(t.rowid))
        .sort((a, b) => a.at - b.at || a.rowid - b.rowid);
      return [...new Set(ids)].flatMap((id) => {
        const hit = turns.filter((t) => t.id === id).sort((a, b) => b.rowid - a.rowid)[0];
        if (!hit || hit.subject === null) return [];
        const gap = hit.session === null ? CONVERSATION_GAP_MS : Infinity;
        const conversation = turns.filter((t) => t.subject === hit.subject && t.session === hit.session && Math.abs(t.at - hit.at) <= gap);
        const i = conversation.indexOf(hit);
        const previous = conversation[i - 1]?.rowid;
        const next = conversation[i + 1]?.rowid;
        return [{ id, ...(previous !== undefined ? { previous } : {}), ...(next !== undefined ? { next } : {}) }];
      });
    },
    close() {
      reference.close();
      partition.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const upsert = (partition: TenantPartition, records: MemoryRecord[]) =>
  partition.upsert(records.map((r) => ({ record: r, vector: embed(r.content.text) })));

/** Both routes, every candidate in reach: each must return exactly the admitted rows (every row matches QUERY). */
function routes(partition: TenantPartition, filter: IndexFilter) {
  const sql = compileFilter(filter)!;
  return {
    bm25: partition
      .searchText(QUERY, filter, 1_000)
      .map((r) => r.rowid)
      .sort(),
    dense: partition
      .searchVector(embed(QUERY), filter, sql, 1_000)
      .map((r) => r.rowid)
      .sort(),
  };
}

describe('the in-memory filter of a partition (PolicyRows)', () => {
  it('admits exactly the rows the SQL filter admits, through both routes, while rows are added, replaced, superseded and purged', async () => {
    const step = fc.record({
      batch: fc.array(record, { minLength: 1, maxLength: 8 }),
      purged: fc.subarray(IDS, { maxLength: 2 }),
      filters: fc.array(indexFilter, { minLength: 1, maxLength: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 5 }), async (steps) => {
        const scratch = scratchPartition();
        try {
          for (const { batch, purged, filters } of steps) {
            // One call for the batch: a version superseded by a later one in the same call keeps its graph node.
            upsert(scratch.partition, batch);
            await scratch.partition.purge(purged);
            for (const filter of filters) {
              const expected = scratch.admittedBySql(filter);
              if (expected === undefined) continue;
              expect(routes(scratch.partition, filter)).toEqual({ bm25: expected, dense: expected });
            }
          }
        } finally {
          scratch.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('finds the neighbours the SQL timeline gives, from memory, while turns are added, revised, moved and purged', async () => {
    const BASE = Date.parse('2024-01-01T00:00:00.000Z');
    // Few conversations and a coarse clock: turns share times, and the 30-minute gap of turns without a session matters.
    const turn = fc
      .record({
        base: record,
        episodic: fc.integer({ min: 0, max: 6 }).map((n) => n > 0),
        subject: fc.constantFrom('s1', 's2'),
        session: fc.constantFrom(null, 'a', 'b'),
        minute: fc.integer({ min: 0, max: 8 }).map((n) => n * 10),
      })
      .map(({ base, episodic, subject, session, minute }) => ({
        ...base,
        kind: episodic ? ('episodic' as const) : ('semantic' as const),
        subject,
        ...(session !== null ? { session } : {}),
        validFrom: new Date(BASE + (base.version % 3) * DAY + minute * 60_000).toISOString(),
        validTo: null,
      }));
    const step = fc.record({
      batch: fc.array(turn, { minLength: 1, maxLength: 8 }),
      purged: fc.subarray(IDS, { maxLength: 1 }),
      filters: fc.array(indexFilter, { minLength: 1, maxLength: 3 }),
    });
    const open: IndexFilter = {
      statuses: ['active', 'superseded', 'disputed'],
      maxSensitivity: 'restricted',
      now: '2025-01-01T00:00:00.000Z',
    };
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 5 }), async (steps) => {
        const scratch = scratchPartition();
        try {
          for (const { batch, purged, filters } of steps) {
            // Checked after the writes and again after the purge (which drops what memory holds): the writes
            // land in the timelines built by the previous step's checks.
            for (const write of [() => upsert(scratch.partition, batch as MemoryRecord[]), () => scratch.partition.purge(purged)]) {
              await write();
              for (const filter of [open, ...filters]) {
                const sql = compileFilter(filter);
                if (!sql) continue;
                expect(scratch.partition.neighbours(IDS, filter, sql)).toEqual(scratch.neighboursBySql(IDS, filter));
              }
            }
          }
        } finally {
          scratch.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('sees a write made after it was loaded: a superseded version leaves the current view, a purged one leaves every view', async () => {
    const scratch = scratchPartition();
    try {
      const open: IndexFilter = { statuses: ['active', 'superseded'], maxSensitivity: 'restricted', now: '2025-01-01T00:00:00.000Z' };
      upsert(scratch.partition, [makeRecord({ id: 'a', policy: { owner: 'ann' } })]);
      const [first] = routes(scratch.partition, open).bm25;
      expect(routes(scratch.partition, open).bm25).toEqual([first]);

      upsert(scratch.partition, [
        makeRecord({ id: 'a', version: 2, revisedAt: '2024-06-01T00:00:00.000Z', policy: { owner: 'ann', sensitivity: 'restricted' } }),
      ]);
      const internal = { ...open, maxSensitivity: 'internal' as const };
      // The new version is too sensitive for `internal`, and the old one is no longer current.
      expect(routes(scratch.partition, internal)).toEqual({ bm25: [], dense: [] });
      const [second] = routes(scratch.partition, open).bm25;
      expect(second).not.toBe(first);
      // Known as of before the revision: the old version, as it was.
      expect(routes(scratch.partition, { ...internal, knownAsOf: '2024-03-01T00:00:00.000Z' }).bm25).toEqual([first]);

      await scratch.partition.purge(['a']);
      expect(routes(scratch.partition, { ...open, knownAsOf: '2024-03-01T00:00:00.000Z' })).toEqual({ bm25: [], dense: [] });
      expect(routes(scratch.partition, open)).toEqual({ bm25: [], dense: [] });
    } finally {
      scratch.close();
    }
  });

  it('forgets what it read inside a write transaction that is rolled back', () => {
    const scratch = scratchPartition();
    try {
      const internal: IndexFilter = { statuses: ['active'], maxSensitivity: 'internal', now: '2025-01-01T00:00:00.000Z' };
      upsert(scratch.partition, [makeRecord({ id: 'a', policy: { owner: 'ann', sensitivity: 'restricted' } })]);
      expect(routes(scratch.partition, internal)).toEqual({ bm25: [], dense: [] });
      // The partition's own connection: a check made inside its transaction reads the uncommitted version, as SQL would.
      const db = scratch.partition['db'];
      expect(() =>
        db.transaction(() => {
          upsert(scratch.partition, [
            makeRecord({ id: 'a', version: 2, revisedAt: '2024-06-01T00:00:00.000Z', policy: { owner: 'ann', sensitivity: 'internal' } }),
          ]);
          expect(routes(scratch.partition, internal).bm25).toHaveLength(1);
          throw new Error('rolled back');
        })(),
      ).toThrow('rolled back');
      // The downgrade never happened: the restricted version is all there is, and it stays hidden.
      expect(routes(scratch.partition, internal)).toEqual({ bm25: [], dense: [] });
      expect(scratch.admittedBySql(internal)).toEqual([]);
    } finally {
      scratch.close();
    }
  });
});
