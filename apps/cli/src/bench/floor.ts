import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Index, MetricKind, ScalarKind } from 'usearch';
import { DEFAULT_TEXT_ANALYSIS, queryTerms, type TextAnalysis } from '@elma/domain';
import { DEFAULT_EXPANSION_ADD, DEFAULT_EXPANSION_SEARCH } from '@elma/infra';

export interface FloorOptions {
  /** The embedded index's folder (`<data>/index`), holding `tenant-<tenant>.db` and `tenant-<tenant>.usearch`. */
  indexDir: string;
  tenant: string;
  dimensions: number;
  /** Candidates asked of each route: what each of recall's routes hands to fusion. */
  depth: number;
  /** Rows read and parsed at the end: what recall packs from. */
  rows: number;
  /** How the partition's BM25 terms were made (the index's default unless configured otherwise). */
  text?: TextAnalysis;
}

/** Reciprocal-rank constant of the floor's merge (the common 60). */
const RRF_K = 60;

/**
 * The floor of a recall: the least an ungoverned engine does on the same
 * files for the same query, in the same process, with the same precomputed
 * query vector. A plain FTS5 MATCH for the best `depth` by bm25, a plain
 * usearch search for the nearest `depth`, their rowids merged by reciprocal
 * rank, and the first `rows` of them read by rowid and parsed. Its own
 * read-only SQLite connection and its own copy of the saved graph: none of
 * ELMA's index adapter (no policy filter, no document-frequency planning, no
 * usage join, no packing), so recall / floor is what all of those cost.
 */
export class Floor {
  private readonly db: Database.Database;
  private readonly graph: Index;
  private readonly text: Database.Statement;
  private readonly read: Database.Statement;

  constructor(private readonly options: FloorOptions) {
    this.db = new Database(join(options.indexDir, `tenant-${options.tenant}.db`), { readonly: true, fileMustExist: true });
    this.graph = newIndex(options.dimensions);
    try {
      this.graph.load(join(options.indexDir, `tenant-${options.tenant}.usearch`));
      this.text = this.db.prepare('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT ?');
      this.read = this.db.prepare('SELECT rowid, id, record FROM memories WHERE rowid IN (SELECT value FROM json_each(?))');
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Vectors in the floor's graph. */
  get size(): number {
    return this.graph.size();
  }

  /** One query: both routes, the merge, the rows read and parsed; returns the ids of the records read, best first. */
  query(text: string, vector: Float32Array): string[] {
    const terms = [...new Set(queryTerms(text, this.options.text ?? DEFAULT_TEXT_ANALYSIS))];
    const match = terms.map((t) => `"${t.replaceAll('"', '""')}"`).join(' OR ');
    const byText = terms.length === 0 ? [] : (this.text.all(match, this.options.depth) as { rowid: number }[]).map((r) => r.rowid);
    const size = this.graph.size();
    const byVector = size === 0 ? [] : Array.from(this.graph.search(vector, Math.min(this.options.depth, size), 1).keys, Number);
    const best = mergeByRank([byText, byVector]).slice(0, this.options.rows);
    const rows = this.read.all(JSON.stringify(best)) as { rowid: number; id: string; record: string }[];
    // Parsed as recall parses its rows (the cost belongs to the floor); the id is a column of its own.
    const parsed = new Map(rows.map((r) => [r.rowid, { ...(JSON.parse(r.record) as object), id: r.id }]));
    return best.flatMap((rowid) => parsed.get(rowid)?.id ?? []);
  }

  /** Closes the connection and frees the graph's native memory (see `releaseGraph`). */
  close(): void {
    releaseGraph(this.graph, this.options.dimensions);
    if (this.db.open) this.db.close();
  }
}

/** Rowids by reciprocal-rank fusion of the rankings, best first; ties by first appearance. */
export function mergeByRank(rankings: readonly (readonly number[])[]): number[] {
  const scores = new Map<number, number>();
  for (const ranking of rankings) ranking.forEach((rowid, rank) => scores.set(rowid, (scores.get(rowid) ?? 0) + 1 / (RRF_K + rank + 1)));
  return [...scores].sort((a, b) => b[1] - a[1]).map(([rowid]) => rowid);
}

function newIndex(dimensions: number): Index {
  // As ELMA creates its graphs (f32, cosine, M 16, the same search width).
  return new Index({
    dimensions,
    metric: MetricKind.Cos,
    quantization: ScalarKind.F32,
    connectivity: 16,
    expansion_add: DEFAULT_EXPANSION_ADD,
    expansion_search: DEFAULT_EXPANSION_SEARCH,
    multi: false,
  });
}

/**
 * The binding keeps a graph's memory after it is garbage-collected, so a
 * graph is emptied by loading an empty one into it: the floor's copy must not
 * stay in the RSS figures of the next size.
 */
function releaseGraph(graph: Index, dimensions: number): void {
  const dir = mkdtempSync(join(tmpdir(), 'elma-bench-floor-'));
  try {
    const empty = join(dir, 'empty.usearch');
    newIndex(dimensions).save(empty);
    graph.load(empty);
  } catch {
    // The copy stays until the process ends: only the RSS figures that follow are larger.
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
