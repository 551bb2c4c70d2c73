import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * What an Elasticsearch node running on this machine keeps in its files, for the erasure proof: a raw byte scan of
 * its folder, and the inspector (scripts/elasticsearch/inspector, built by ensure-elasticsearch.mjs) reading the
 * shards' Lucene indices read-only, since stored fields are compressed and a byte scan can miss text still there.
 * The node's folder is the ELMA_ES_DATA that start-elasticsearch.mjs prints; it is only known for a local node.
 */
export interface LocalNode {
  url: string;
  /** The folder given (start-elasticsearch.mjs's ELMA_ES_DATA: path.data, logs, node log). */
  folder: string;
  /** The node's path.data, checked to lie inside `folder`. */
  data: string;
  /** The node's path.home, where the inspector and `java-home` are. */
  home: string;
}

/** A needle the inspector found: where, and in a live or a deleted document. */
export interface IndexHit {
  needle: string;
  index: string;
  segment: string;
  in: 'stored' | 'terms' | 'docValues' | 'vectors';
  field: string;
  deleted: boolean;
}

export interface Inspection {
  /** Every segment of every commit point of the indices' shards. */
  segments: { index: string; commit: number; name: string; maxDoc: number; deleted: number }[];
  hits: IndexHit[];
}

async function get<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** The node at `url`, with its folders as it reports them; fails unless its data lies inside `folder`. */
export async function localNode(url: string, folder: string): Promise<LocalNode> {
  const reply = await get<{ nodes: Record<string, { settings: { path: { data: string | string[]; home: string } } }> }>(
    new URL('/_nodes/_local/settings?filter_path=nodes.*.settings.path', url).href,
  );
  const { path } = Object.values(reply.nodes)[0].settings;
  const data = realpathSync([path.data].flat()[0]);
  const inside = relative(realpathSync(folder), data);
  if (inside.startsWith('..') || !existsSync(data))
    throw new Error(`${folder} is not the folder of the node at ${url} (its data is in ${data})`);
  return { url, folder, data, home: path.home };
}

/** The shard folders (`<data>/indices/<uuid>/<shard>`) of the concrete indices behind these names or patterns. */
export async function shardFolders(node: LocalNode, names: string[]): Promise<{ index: string; folder: string }[]> {
  const indices = await get<{ index: string; uuid: string }[]>(
    new URL(`/_cat/indices/${names.join(',')}?format=json&h=index,uuid&expand_wildcards=all`, node.url).href,
  );
  return indices.flatMap(({ index, uuid }) => {
    const root = join(node.data, 'indices', uuid);
    const shards = existsSync(root) ? readdirSync(root).filter((s) => /^\d+$/.test(s)) : [];
    if (shards.length === 0) throw new Error(`no shard folder of index ${index} under ${root}`);
    return shards.map((shard) => ({ index, folder: join(root, shard) }));
  });
}

/** Deleted and live documents per index, as the segments API reports them. */
export async function segmentCounts(url: string, names: string[]): Promise<Record<string, { live: number; deleted: number }>> {
  const reply = await get<{
    indices: Record<string, { shards: Record<string, { segments: Record<string, { num_docs: number; deleted_docs: number }> }[]> }>;
  }>(new URL(`/${names.join(',')}/_segments?expand_wildcards=all`, url).href);
  const counts: Record<string, { live: number; deleted: number }> = {};
  for (const [index, { shards }] of Object.entries(reply.indices)) {
    counts[index] = { live: 0, deleted: 0 };
    for (const copy of Object.values(shards).flat()) {
      for (const segment of Object.values(copy.segments)) {
        counts[index].live += segment.num_docs;
        counts[index].deleted += segment.deleted_docs;
      }
    }
  }
  return counts;
}

/**
 * Flushes the indices (the inspector reads what is committed; a flush merges nothing away), then lists where the
 * needles occur in their shards: stored fields, terms, doc values of live and deleted documents, and vectors
 * pointing the way of one of `vectors`. Texts match case-insensitively as substrings.
 */
export async function inspectIndices(
  node: LocalNode,
  names: string[],
  needles: { texts: string[]; vectors?: Float32Array[] },
): Promise<Inspection> {
  const inspector = join(node.home, 'inspector');
  if (!existsSync(inspector)) throw new Error(`the node at ${node.home} has no index inspector (ensure-elasticsearch.mjs builds it)`);
  const flush = await fetch(new URL(`/${names.join(',')}/_flush?force=true&wait_if_ongoing=true&expand_wildcards=all`, node.url), {
    method: 'POST',
  });
  if (!flush.ok) throw new Error(`flush failed: ${flush.status} ${await flush.text()}`);
  const shards = await shardFolders(node, names);
  const labels = [...needles.texts, ...(needles.vectors ?? []).map((_, i) => `vector #${i}`)];
  if (needles.texts.some((t) => t.includes('\n') || t.trim() === '')) throw new Error('a text needle is one non-blank line');
  const input = [...needles.texts.map((t) => `text ${t}`), ...(needles.vectors ?? []).map((v) => `vector ${Array.from(v).join(',')}`)].join(
    '\n',
  );
  const java = join(readFileSync(join(node.home, 'java-home'), 'utf8').trim(), 'bin', 'java');
  const run = spawnSync(
    java,
    [
      '--enable-native-access=ALL-UNNAMED',
      '--add-modules',
      'jdk.incubator.vector',
      '-cp',
      `${inspector}:${join(node.home, 'lib', '*')}`,
      'org.elma.esinspector.Inspector',
      ...shards.map((s) => join(s.folder, 'index')),
    ],
    { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
  );
  if (run.status !== 0) throw new Error(`the index inspector failed (${run.status ?? run.signal}): ${run.stderr.slice(-2000)}`);
  const report = JSON.parse(run.stdout) as {
    indices: {
      commits: { generation: number; segments: { name: string; maxDoc: number; deleted: number }[] }[];
      hits: { needle: number; segment: string; in: IndexHit['in']; field: string; deleted: boolean }[];
      truncated: boolean;
    }[];
  };
  const inspection: Inspection = { segments: [], hits: [] };
  report.indices.forEach(({ commits, hits }, i) => {
    const { index } = shards[i];
    for (const commit of commits) for (const s of commit.segments) inspection.segments.push({ index, commit: commit.generation, ...s });
    for (const h of hits)
      inspection.hits.push({ needle: labels[h.needle], index, segment: h.segment, in: h.in, field: h.field, deleted: h.deleted });
  });
  return inspection;
}

/** Every file under `root` whose raw bytes contain `needle` (compressed stored fields can hide it: see inspectIndices). */
export function filesContaining(root: string, needle: Buffer): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = statSync(path, { throwIfNoEntry: false });
      // A file the node deleted meanwhile (a merged-away segment) is no longer on disk.
      if (!stat) continue;
      if (stat.isDirectory()) walk(path);
      else if (readFileOrNothing(path).includes(needle)) found.push(path);
    }
  };
  walk(root);
  return found;
}

function readFileOrNothing(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw error;
  }
}
