/**
 * Measures ranking variants (fusion method, normalisation, dense floor,
 * neighbour smoothing) on LoCoMo's dev half, evidence R@10, straight on the
 * SQLite index (no ingest pipeline: records are built as ingest builds an
 * episodic memory). Vectors come from a JSON file of e5 vectors
 * ({ turns: number[][], questions: number[][] }, in the files' line order);
 * without it only the BM25 variants run. Issue 15 (helper RANK) figures.
 *
 *   npx tsx scripts/measure-ranking.ts <locomo-dir> [vectors.json]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Retrieval } from '@elma/application';
import { type Fusion, type IndexFilter, type Normalisation } from '@elma/domain';
import { makeRecord } from '@elma/domain/testing';
import { HashingEmbedder, SqliteMemoryIndex } from '@elma/infra';
import { parseSessionDateTime, recallAt } from '../apps/cli/src/eval/locomo-metrics';

interface Turn {
  sample_id: string;
  session: number;
  session_datetime: string;
  dia_id: string;
  speaker: string;
  text: string;
  blip_caption?: string | null;
}
interface Question {
  sample_id: string;
  question: string;
  category: number;
  evidence: string[];
}

const [dir, vectorFile] = process.argv.slice(2);
const lines = <T>(path: string): T[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
const turns = lines<Turn>(join(dir, 'turns.jsonl'));
const questions = lines<Question>(join(dir, 'qa.jsonl'));
const vectors = vectorFile ? (JSON.parse(readFileSync(vectorFile, 'utf8')) as { turns: number[][]; questions: number[][] }) : undefined;
const hashing = new HashingEmbedder({ dimensions: 384 });
const TENANT = 'locomo';

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'measure-ranking-'));
  const index = await SqliteMemoryIndex.open({ dir: work, dimensions: 384 });
  const idOf = (t: { sample_id: string; dia_id: string }) => `mem_ep_${t.sample_id}/${t.dia_id}`;
  const withSession = process.env.NO_SESSION !== '1';
  for (let i = 0; i < turns.length; i += 500) {
    await index.upsert(
      TENANT,
      turns.slice(i, i + 500).map((t, j) => ({
        record: makeRecord({
          id: idOf(t),
          tenant: TENANT,
          subject: t.sample_id,
          kind: 'episodic',
          text: `${t.speaker}: ${t.text}${t.blip_caption ? ` [image: ${t.blip_caption}]` : ''}`,
          validFrom: parseSessionDateTime(t.session_datetime),
          ...(withSession ? { session: `${t.sample_id}/s${t.session}` } : {}),
          policy: { owner: t.sample_id, purposes: ['eval'] },
        }),
        vector: vectors ? Float32Array.from(vectors.turns[i + j]) : hashing.embedOne(t.text),
      })),
    );
  }
  const asked = questions
    .map((q, i) => ({ q, i }))
    .filter(({ q }) => q.category >= 1 && q.category <= 4 && q.evidence.length > 0)
    .map(({ q, i }) => ({
      q,
      vector: vectors ? Float32Array.from(vectors.questions[i]) : undefined,
      evidence: q.evidence.map((d) => idOf({ sample_id: q.sample_id, dia_id: d })),
    }));
  const now = new Date().toISOString();
  const filterOf = (sample: string): IndexFilter => ({
    kinds: ['episodic'],
    statuses: ['active'],
    maxSensitivity: 'restricted',
    now,
    clauses: [{ ruleId: 'eval', maxSensitivity: 'restricted', owner: sample }],
  });

  const run = async (
    name: string,
    options: { text: boolean; dense: boolean; fusion?: Fusion; smoothing: number; normalisation?: Normalisation },
  ) => {
    const retrieval = new Retrieval(index, { smoothing: options.smoothing });
    let sum = 0;
    let n = 0;
    for (const { q, vector, evidence } of asked) {
      if (options.dense && !vector) return;
      const fusion = options.fusion && options.normalisation ? { ...options.fusion, normalisation: options.normalisation } : options.fusion;
      const hits = await retrieval.search({
        tenant: TENANT,
        text: options.text ? q.question : '',
        ...(options.dense ? { vector } : {}),
        limit: 20,
        filter: filterOf(q.sample_id),
        ...(fusion ? { fusion } : {}),
        smoothing: options.smoothing > 0,
      });
      sum += recallAt(
        10,
        hits.map((h) => h.record.id),
        evidence,
      );
      n++;
    }
    process.stdout.write(`${name.padEnd(48)} R@10 ${(sum / n).toFixed(3)}  (n=${n})\n`);
  };

  const norm = (floor: number, w = 0.5): Fusion => ({ method: 'normalised', weights: { bm25: w, dense: 1 - w }, denseFloor: floor });
  const rrf = (floor: number): Fusion => ({ method: 'rrf', weights: { bm25: 1, dense: 1 }, denseFloor: floor });
  const variants = (process.env.VARIANTS ?? 'bm25,dense,fused').split(',');
  if (variants.includes('bm25')) {
    await run('bm25', { text: true, dense: false, smoothing: 0 });
    await run('bm25 rrf-scored + smoothing 0.5', { text: true, dense: false, smoothing: 0.5 });
    for (const normalisation of ['minmax', 'max'] as const)
      for (const f of [0.25, 0.5, 0.75])
        await run(`bm25 ${normalisation} + smoothing ${f}`, { text: true, dense: false, fusion: norm(0, 1), normalisation, smoothing: f });
  }
  if (variants.includes('dense')) {
    await run('dense', { text: false, dense: true, smoothing: 0 });
    await run('dense + smoothing 0.5', { text: false, dense: true, smoothing: 0.5 });
  }
  if (variants.includes('fused')) {
    await run('rrf (no floor)', { text: true, dense: true, smoothing: 0 });
    await run('rrf (no floor) + smoothing', { text: true, dense: true, smoothing: 0.5 });
    for (const floor of [0, 0.7, 0.75, 0.8]) {
      await run(`rrf floor ${floor} + smoothing`, { text: true, dense: true, fusion: rrf(floor), smoothing: 0.5 });
      await run(`normalised minmax floor ${floor}`, { text: true, dense: true, fusion: norm(floor), smoothing: 0 });
      await run(`normalised minmax floor ${floor} + smoothing`, { text: true, dense: true, fusion: norm(floor), smoothing: 0.5 });
      await run(`normalised max floor ${floor} + smoothing`, {
        text: true,
        dense: true,
        fusion: norm(floor),
        smoothing: 0.5,
        normalisation: 'max',
      });
    }
    for (const w of [0.3, 0.7])
      await run(`normalised minmax floor 0.75 w(bm25)=${w} + smoothing`, {
        text: true,
        dense: true,
        fusion: norm(0.75, w),
        smoothing: 0.5,
      });
  }
  if (variants.includes('floors'))
    for (const floor of [0.8, 0.82, 0.85, 0.88])
      await run(`normalised minmax floor ${floor} + smoothing`, { text: true, dense: true, fusion: norm(floor), smoothing: 0.5 });
  await index.close();
  rmSync(work, { recursive: true, force: true });
}

void main();
