import type Database from 'better-sqlite3';
import {
  SENSITIVITY_RANK,
  SHARED_OWNERSHIP_KEY,
  occurredRange,
  reduceClauses,
  type IndexFilter,
  type IndexScope,
  type ReadClause,
} from '@elma/domain';
import { compileExclusions, compileScope, millis } from './filter-sql';
import { lineageNeedle, purposeNeedle } from './schema';

/** An interned value that no row has: a NULL column, or a value never seen. */
const NONE = -1;

/** `shared` of a row whose lineage_set is NULL: `instr(NULL, …) = 0` is NULL in SQL, so an owner clause never admits it. */
const LINEAGE_UNKNOWN = 2;

/** The policy columns, in the order `load` selects them after the rowid. */
const COLUMNS = `kind, status, sensitivity_rank, owner, project, retention_class, purpose_set,
  CASE WHEN lineage_set IS NULL THEN ${LINEAGE_UNKNOWN} WHEN instr(lineage_set, ?) > 0 THEN 1 ELSE 0 END,
  valid_from, valid_to, tx_from, tx_to, expires_at, subject, session`;

/** Columns whose change alters what a filter admits or where a turn sits (the update trigger watches exactly these). */
const WATCHED = `rowid, kind, status, sensitivity_rank, owner, project, retention_class, purpose_set, lineage_set,
  valid_from, valid_to, tx_from, tx_to, expires_at, subject, session`;

type Row = [
  rowid: number,
  kind: string,
  status: string,
  sensitivity: number,
  owner: string,
  project: string | null,
  retention: string | null,
  purposes: string | null,
  shared: number,
  validFrom: number,
  validTo: number | null,
  txFrom: number,
  txTo: number | null,
  expiresAt: number | null,
  subject: string | null,
  session: string | null,
];

/** Bytes of the columns per rowid: three of one byte, eight of four, five of eight. */
const BYTES_PER_ROWID = 3 + 8 * 4 + 5 * 8;

/** A compiled filter: whether the row with this rowid passes (exclusions aside, see `admit`). */
type Test = (rowid: number) => boolean;

/**
 * The filter columns of every row of a partition (past versions too), held
 * in memory by rowid, so the BM25 and dense routes check their candidates
 * against the caller's policy without a row lookup and a 20-clause SQL
 * expression per candidate (which cost as much as the search itself).
 *
 * It is a cache of the rows, never a second truth: loaded at the first
 * search, and kept exact by TEMP triggers (this connection only, nothing in
 * the file) that name every inserted, deleted or re-attributed row; the named
 * rows are read again before the next check, and a row that is gone is
 * absent, so a rolled-back write only costs a re-read. Triggers see this
 * connection's writes only, which are all the writes: one process owns a
 * data folder (`claimDataDir`) and opens each partition once.
 *
 * It also tells where an episodic row sits in its conversation (subject,
 * session, valid time: `turns`) and which turns are next to it
 * (`turnsBeside`, from each conversation's turns kept in time order), so
 * neighbour smoothing reads no row and seeks no index.
 *
 * It holds no content: categorical values (owner, project, subject and
 * session ids among them) are interned, times are numbers, lineage is reduced
 * to the one bit an owner clause reads; a purge drops it all (`forget`). Legal-hold exclusions, which
 * match any ancestor key, are still checked in SQL, on the candidates that
 * pass.
 *
 * `admit` must agree with `compileFilter` row for row (policy-rows.int.spec.ts
 * holds the two to that on random rows, filters and writes).
 */
export class PolicyRows {
  private loaded = false;
  /** Rows inserted, deleted or re-attributed on this connection since it was opened (`TermFrequencies` reads it). */
  rowWrites = 0;
  /** Rows written since they were read (by rowid); read again before the next check. */
  private readonly dirty = new Set<number>();
  private capacity = 0;
  private present = new Uint8Array(0);
  private sensitivity = new Uint8Array(0);
  private shared = new Uint8Array(0);
  private kind = new Int32Array(0);
  private status = new Int32Array(0);
  private owner = new Int32Array(0);
  private project = new Int32Array(0);
  private retention = new Int32Array(0);
  private purposes = new Int32Array(0);
  private subject = new Int32Array(0);
  private session = new Int32Array(0);
  private validFrom = new Float64Array(0);
  private validTo = new Float64Array(0);
  private txFrom = new Float64Array(0);
  private txTo = new Float64Array(0);
  private expiresAt = new Float64Array(0);
  /**
   * Each conversation's episodic rows in (valid time, rowid) order, by `conversationKey`: built at the
   * first `turnsBeside`, then kept in step with the columns by `refresh` (dropped with them).
   */
  private timelines: Map<string, number[]> | undefined;
  private timelineRows = 0;
  private readonly interned = new Map<string, number>();
  private readonly values: string[] = [];
  private internedBytes = 0;
  /** Prepared once: a statement prepared per check would cost more than the check. */
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    db.function('elma_policy_row_changed', { deterministic: false, directOnly: true }, (rowid) => {
      this.rowWrites += 1;
      if (this.loaded) this.dirty.add(Number(rowid));
      return null;
    });
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS policy_rows_insert AFTER INSERT ON main.memories
        BEGIN SELECT elma_policy_row_changed(NEW.rowid); END;
      CREATE TEMP TRIGGER IF NOT EXISTS policy_rows_delete AFTER DELETE ON main.memories
        BEGIN SELECT elma_policy_row_changed(OLD.rowid); END;
      CREATE TEMP TRIGGER IF NOT EXISTS policy_rows_update AFTER UPDATE OF ${WATCHED} ON main.memories
        BEGIN SELECT elma_policy_row_changed(OLD.rowid); SELECT elma_policy_row_changed(NEW.rowid); END;
    `);
  }

  /** Bytes held: the columns (about 70 bytes per rowid up to the highest) and the interned values. */
  get memoryBytes(): number {
    return this.capacity * BYTES_PER_ROWID + this.internedBytes + this.timelineRows * 8 + (this.timelines?.size ?? 0) * 96;
  }

  /**
   * The rowids among `rowids` that the filter admits, exclusions included.
   * `compileFilter(filter)` must not be undefined (the caller answers an
   * impossible filter without asking).
   */
  admit(rowids: readonly number[], filter: IndexFilter, scoped?: readonly number[]): Set<number> {
    return this.checker(filter, scoped)(rowids);
  }

  /**
   * `admit` with the filter compiled once, for many checks in one call: it
   * reflects the rows as they are now, so it must not outlive the call (a
   * later write is not seen). `scoped`, when given, is the rows holding the
   * scope's keys (`TenantPartition.scopedRows` of `filter.scope`, read in the
   * same call): the scope is then checked in memory, its keys by membership
   * and its valid-time range on the rows' columns, rather than in SQL.
   */
  checker(filter: IndexFilter, scoped?: readonly number[]): (rowids: readonly number[]) => Set<number> {
    this.refresh();
    const policy = this.compile(filter);
    const inScope = filter.scope && scoped ? this.scopeTest(filter.scope, scoped) : undefined;
    const test = inScope ? (rowid: number) => inScope(rowid) && policy(rowid) : policy;
    // Legal holds and (unless `scoped` is given) the caller's scope are checked in SQL, on the candidates that pass:
    // holds match any ancestor key, a scope any of a row's scope keys, neither of which is kept in memory.
    const exclusions = filter.exclude ? compileExclusions(filter.exclude) : { where: [], params: [] };
    const scope = filter.scope && !inScope ? compileScope(filter.scope) : { where: [], params: [] };
    if (scope === undefined) return () => new Set();
    const where = [...exclusions.where, ...scope.where];
    const params = [...exclusions.params, ...scope.params];
    const held =
      where.length > 0
        ? this.stmt(`SELECT m.rowid FROM json_each(?) j CROSS JOIN memories m ON m.rowid = j.value WHERE ${where.join(' AND ')}`)
        : undefined;
    return (rowids) => {
      const passed = rowids.filter((rowid) => rowid < this.capacity && this.present[rowid] === 1 && test(rowid));
      if (!held || passed.length === 0) return new Set(passed);
      return new Set(held.pluck().all(JSON.stringify(passed), ...params) as number[]);
    };
  }

  /** Whether a row is in `scope`, given the rows holding its keys (see `checker`). */
  private scopeTest(scope: IndexScope, scoped: readonly number[]): (rowid: number) => boolean {
    const rows = new Set(scoped);
    const { after = -Infinity, before = Infinity } = occurredRange(scope);
    return (rowid) => rows.has(rowid) && this.validFrom[rowid] >= after && this.validFrom[rowid] < before;
  }

  /**
   * Where each row sits in its conversation, for the episodic rows among
   * `rowids` that have a subject (absent rows and others left out), in order:
   * what a neighbour seek starts from, without reading the rows.
   */
  turns(rowids: readonly number[]): { rowid: number; subject: string; session: string | null; validFrom: number }[] {
    this.refresh();
    const episodic = this.interned.get('episodic');
    return rowids.flatMap((rowid) => {
      if (episodic === undefined || !(rowid < this.capacity && this.present[rowid] === 1)) return [];
      const subject = this.subject[rowid];
      if (this.kind[rowid] !== episodic || subject === NONE) return [];
      const session = this.session[rowid];
      return [
        { rowid, subject: this.values[subject], session: session === NONE ? null : this.values[session], validFrom: this.validFrom[rowid] },
      ];
    });
  }

  /**
   * Up to `count` episodic rows of the turn `rowid`'s conversation (same
   * subject, same session or both without one) just before (or after) it in
   * (valid time, rowid) order, at most `gap` ms of valid time away, nearest
   * first, whatever a filter would say of them: the unfiltered timeline seek,
   * from memory. None for a row that is no turn (see `turns`).
   */
  turnsBeside(rowid: number, direction: 'previous' | 'next', gap: number, count: number): number[] {
    this.refresh();
    if (!this.isTurn(rowid)) return [];
    const timeline = this.timelineIndex().get(this.conversationKey(rowid));
    if (!timeline) return [];
    const at = this.validFrom[rowid];
    const near: number[] = [];
    if (direction === 'previous') {
      for (let i = this.positionOf(timeline, at, rowid) - 1; i >= 0 && near.length < count; i--) {
        if (this.validFrom[timeline[i]] < at - gap) break;
        near.push(timeline[i]);
      }
    } else {
      let i = this.positionOf(timeline, at, rowid);
      if (timeline[i] === rowid) i++;
      for (; i < timeline.length && near.length < count; i++) {
        if (this.validFrom[timeline[i]] > at + gap) break;
        near.push(timeline[i]);
      }
    }
    return near;
  }

  private isTurn(rowid: number): boolean {
    return (
      rowid < this.capacity &&
      this.present[rowid] === 1 &&
      this.subject[rowid] !== NONE &&
      this.kind[rowid] === (this.interned.get('episodic') ?? NONE - 1)
    );
  }

  private conversationKey(rowid: number): string {
    return `${this.subject[rowid]} ${this.session[rowid]}`;
  }

  /** The first index of `timeline` at or after (at, rowid) in (valid time, rowid) order. */
  private positionOf(timeline: readonly number[], at: number, rowid: number): number {
    let low = 0;
    let high = timeline.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const other = timeline[middle];
      const validFrom = this.validFrom[other];
      if (validFrom < at || (validFrom === at && other < rowid)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private timelineIndex(): Map<string, number[]> {
    if (this.timelines) return this.timelines;
    const timelines = new Map<string, number[]>();
    let rows = 0;
    for (let rowid = 0; rowid < this.capacity; rowid++) {
      if (!this.isTurn(rowid)) continue;
      const key = this.conversationKey(rowid);
      const timeline = timelines.get(key);
      if (timeline) timeline.push(rowid);
      else timelines.set(key, [rowid]);
      rows++;
    }
    for (const timeline of timelines.values()) timeline.sort((a, b) => this.validFrom[a] - this.validFrom[b] || a - b);
    this.timelines = timelines;
    this.timelineRows = rows;
    return timelines;
  }

  /** Takes a row out of its conversation's timeline, as the columns place it now (before they are read again). */
  private unplace(rowid: number): void {
    if (!this.timelines || !this.isTurn(rowid)) return;
    const timeline = this.timelines.get(this.conversationKey(rowid));
    if (!timeline) return;
    const i = this.positionOf(timeline, this.validFrom[rowid], rowid);
    if (timeline[i] !== rowid) return;
    timeline.splice(i, 1);
    this.timelineRows--;
    if (timeline.length === 0) this.timelines.delete(this.conversationKey(rowid));
  }

  /** Puts a row (just read) into its conversation's timeline. */
  private place(rowid: number): void {
    if (!this.timelines || !this.isTurn(rowid)) return;
    const key = this.conversationKey(rowid);
    let timeline = this.timelines.get(key);
    if (!timeline) this.timelines.set(key, (timeline = []));
    timeline.splice(this.positionOf(timeline, this.validFrom[rowid], rowid), 0, rowid);
    this.timelineRows++;
  }

  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Reads the rows written since the last check (all of them the first time).
   * Inside a write transaction what is read may yet be rolled back, which no
   * trigger reports: the rows are read as the transaction sees them (as SQL
   * would), but stay to be read again at the next check.
   */
  private refresh(): void {
    const tentative = this.db.inTransaction;
    if (!this.loaded) {
      this.present.fill(0);
      this.dropTimelines();
      this.load(this.stmt(`SELECT rowid, ${COLUMNS} FROM memories`));
      this.loaded = !tentative;
      return;
    }
    if (this.dirty.size === 0) return;
    const rowids = [...this.dirty];
    // Absent until read again: a row that is gone stays so, and a failed read admits nothing rather than stale columns.
    for (const rowid of rowids) {
      this.unplace(rowid);
      if (rowid < this.capacity) this.present[rowid] = 0;
    }
    this.load(this.stmt(`SELECT m.rowid, ${COLUMNS} FROM json_each(?) j CROSS JOIN memories m ON m.rowid = j.value`), [
      JSON.stringify(rowids),
    ]);
    for (const rowid of rowids) this.place(rowid);
    if (!tentative) this.dirty.clear();
  }

  /**
   * Drops everything held (a purge calls it): the interned values include
   * owners and projects, and an erased subject's id must not stay in them.
   * The next check reads the rows again.
   */
  forget(): void {
    this.loaded = false;
    this.dirty.clear();
    this.dropTimelines();
    this.capacity = 0;
    for (const column of ['present', 'sensitivity', 'shared'] as const) this[column] = new Uint8Array(0);
    for (const column of ['kind', 'status', 'owner', 'project', 'retention', 'purposes', 'subject', 'session'] as const)
      this[column] = new Int32Array(0);
    for (const column of ['validFrom', 'validTo', 'txFrom', 'txTo', 'expiresAt'] as const) this[column] = new Float64Array(0);
    this.interned.clear();
    this.values.length = 0;
    this.internedBytes = 0;
  }

  private dropTimelines(): void {
    this.timelines = undefined;
    this.timelineRows = 0;
  }

  private load(statement: Database.Statement, params: unknown[] = []): void {
    for (const row of statement.raw().iterate(lineageNeedle(SHARED_OWNERSHIP_KEY), ...params) as IterableIterator<Row>) {
      const [
        rowid,
        kind,
        status,
        sensitivity,
        owner,
        project,
        retention,
        purposes,
        shared,
        validFrom,
        validTo,
        txFrom,
        txTo,
        expiresAt,
        subject,
        session,
      ] = row;
      this.reserve(rowid);
      this.present[rowid] = 1;
      this.kind[rowid] = this.intern(kind);
      this.status[rowid] = this.intern(status);
      this.sensitivity[rowid] = sensitivity;
      this.owner[rowid] = this.intern(owner);
      this.project[rowid] = this.intern(project);
      this.retention[rowid] = this.intern(retention);
      this.purposes[rowid] = this.intern(purposes);
      this.shared[rowid] = shared;
      this.validFrom[rowid] = validFrom;
      this.validTo[rowid] = validTo ?? NaN;
      this.txFrom[rowid] = txFrom;
      this.txTo[rowid] = txTo ?? NaN;
      this.expiresAt[rowid] = expiresAt ?? NaN;
      this.subject[rowid] = this.intern(subject);
      this.session[rowid] = this.intern(session);
    }
  }

  private intern(value: string | null): number {
    if (value === null) return NONE;
    let id = this.interned.get(value);
    if (id === undefined) {
      id = this.values.length;
      this.values.push(value);
      this.interned.set(value, id);
      this.internedBytes += 2 * value.length + 64;
    }
    return id;
  }

  /** Grows every column to hold `rowid` (doubling, so a load of n rows copies O(n)). */
  private reserve(rowid: number): void {
    if (rowid < this.capacity) return;
    const capacity = Math.max(1024, this.capacity * 2, rowid + 1);
    const grow = <T extends Uint8Array | Int32Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.present = grow(this.present, (n) => new Uint8Array(n));
    this.sensitivity = grow(this.sensitivity, (n) => new Uint8Array(n));
    this.shared = grow(this.shared, (n) => new Uint8Array(n));
    for (const column of ['kind', 'status', 'owner', 'project', 'retention', 'purposes', 'subject', 'session'] as const)
      this[column] = grow(this[column], (n) => new Int32Array(n));
    for (const column of ['validFrom', 'validTo', 'txFrom', 'txTo', 'expiresAt'] as const)
      this[column] = grow(this[column], (n) => new Float64Array(n));
    this.capacity = capacity;
  }

  /** The interned ids of `values` (a value never seen matches no row, so it is left out). */
  private idsOf(values: readonly string[]): Set<number> {
    return new Set(values.flatMap((v) => (this.interned.has(v) ? [this.interned.get(v)!] : [])));
  }

  /** Whether a row's purpose set (interned, `\x1f`-delimited) contains one of `purposes`: `instr(purpose_set, needle)`. */
  private purposeTest(purposes: readonly string[]): Test {
    const needles = purposes.map(purposeNeedle);
    const known = new Map<number, boolean>();
    return (rowid) => {
      const set = this.purposes[rowid];
      if (set === NONE) return false;
      let has = known.get(set);
      if (has === undefined) {
        has = needles.some((needle) => this.values[set].includes(needle));
        known.set(set, has);
      }
      return has;
    };
  }

  /** The filter as tests over the columns, in `compileFilter`'s order and with its semantics (NULLs included). */
  private compile(filter: IndexFilter): Test {
    const tests: Test[] = [];
    const inList = (column: Int32Array, values: readonly string[]) => {
      const ids = this.idsOf(values);
      tests.push((rowid) => ids.has(column[rowid]));
    };
    inList(this.status, filter.statuses);
    if (filter.kinds) inList(this.kind, filter.kinds);
    const maxRank = SENSITIVITY_RANK[filter.maxSensitivity];
    tests.push((rowid) => this.sensitivity[rowid] <= maxRank);
    if (filter.purposes) tests.push(this.purposeTest(filter.purposes));
    if (filter.asOf !== undefined) {
      const asOf = millis(filter.asOf, 'asOf');
      // NaN (an open end) compares false, hence the explicit test.
      tests.push((rowid) => this.validFrom[rowid] <= asOf && !(this.validTo[rowid] <= asOf));
    }
    if (filter.knownAsOf !== undefined) {
      const knownAsOf = millis(filter.knownAsOf, 'knownAsOf');
      tests.push((rowid) => this.txFrom[rowid] <= knownAsOf && !(this.txTo[rowid] <= knownAsOf));
    } else {
      tests.push((rowid) => Number.isNaN(this.txTo[rowid]));
    }
    const now = millis(filter.now, 'now');
    tests.push((rowid) => !(this.expiresAt[rowid] <= now));
    if (filter.workingSession !== undefined) {
      const working = this.interned.get('working') ?? NONE;
      const session = this.interned.get(filter.workingSession) ?? NONE;
      tests.push((rowid) => this.kind[rowid] !== working || (session !== NONE && this.session[rowid] === session));
    }
    if (filter.clauses) {
      const reduced = reduceClauses(filter.clauses, filter);
      const purposes = new Set(reduced.map((c) => c.purpose));
      const shared = purposes.size === 1 ? [...purposes][0] : undefined;
      if (shared !== undefined) tests.push(this.purposeTest([shared]));
      const clauses = reduced.map((c) => this.compileClause(shared === undefined ? c : { ...c, purpose: undefined }, maxRank));
      if (!clauses.some((c) => c === undefined)) tests.push((rowid) => clauses.some((c) => c!(rowid)));
    }
    return (rowid) => tests.every((test) => test(rowid));
  }

  /** One allow clause (every attribute it names must hold); undefined for a clause that names none (admits all). */
  private compileClause(clause: ReadClause, globalRank: number): Test | undefined {
    const tests: Test[] = [];
    const inList = (column: Int32Array, values: readonly string[] | undefined) => {
      if (!values) return;
      const ids = this.idsOf(values);
      tests.push((rowid) => ids.has(column[rowid]));
    };
    inList(this.kind, clause.kinds);
    inList(this.status, clause.statuses);
    inList(this.retention, clause.retentionClasses);
    // The global cap already holds; a clause repeats it only when it is stricter.
    const maxRank = SENSITIVITY_RANK[clause.maxSensitivity];
    if (maxRank < globalRank) tests.push((rowid) => this.sensitivity[rowid] <= maxRank);
    // A record derived from another owner's records is theirs too: an owner-only clause never admits it.
    if (clause.owner !== undefined) {
      const owner = this.interned.get(clause.owner) ?? NONE;
      tests.push((rowid) => owner !== NONE && this.owner[rowid] === owner && this.shared[rowid] === 0);
    }
    // A record without a project (NONE) never matches a project clause.
    if (clause.project !== undefined) {
      const project = this.interned.get(clause.project) ?? NONE;
      tests.push((rowid) => project !== NONE && this.project[rowid] === project);
    }
    if (clause.purpose !== undefined) tests.push(this.purposeTest([clause.purpose]));
    if (tests.length === 0) return undefined;
    return (rowid) => tests.every((test) => test(rowid));
  }
}
