import type Database from 'better-sqlite3';

/** Past this many remembered terms the memory is cleared whole (query terms repeat; a pasted document's do not). */
const MAX_TERMS = 20_000;

/** Row writes a remembered frequency survives whatever it is: a rare term's is re-read often, and cheaply. */
const MIN_SLACK = 64;

/**
 * Document frequencies of query terms, to plan BM25 queries
 * (`TenantPartition.searchText`). They come from the FTS index itself (the
 * fts5vocab view), which costs nothing on write and holds no term longer
 * than its documents; but reading one walks the term's whole posting list,
 * so a common term cost about 0.3 ms per query at 100,000 memories.
 *
 * So a frequency once read is remembered while it cannot have drifted by
 * more than an eighth: until the partition has had more row writes since
 * (`writes()`, counted by the rows' triggers) than an eighth of it, and at
 * least MIN_SLACK. A common term, whose read is dear, is thus read again
 * rarely; a rare one, whose read is cheap, often. Frequencies only plan the
 * query (which words drive the match): a drifted one changes which words
 * bound the work, never whether a matching row is admitted. A term read as
 * absent is never remembered, so a word written after it is found at once.
 *
 * Erasure: `forget()` drops everything (a purge calls it), so no count of an
 * erased memory's words outlives it here; what is remembered is query terms
 * and counts, in this process only.
 */
export class TermFrequencies {
  private readonly known = new Map<string, { df: number; writes: number }>();
  private read: Database.Statement | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly writes: () => number,
  ) {}

  /** The number of FTS rows (current and past versions) that contain the term. */
  of(term: string): number {
    const now = this.writes();
    const remembered = this.known.get(term);
    if (remembered && now - remembered.writes <= Math.max(MIN_SLACK, remembered.df / 8)) return remembered.df;
    this.read ??= this.db.prepare('SELECT doc FROM memories_vocab WHERE term = ?').pluck();
    const df = (this.read.get(term) as number | undefined) ?? 0;
    if (df === 0) {
      this.known.delete(term);
      return 0;
    }
    if (this.known.size >= MAX_TERMS) this.known.clear();
    this.known.set(term, { df, writes: now });
    return df;
  }

  /** Drops every remembered frequency (after a purge, or when the FTS table is rebuilt). */
  forget(): void {
    this.known.clear();
    this.read = undefined;
  }
}
