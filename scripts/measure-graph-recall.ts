/**
 * HNSW recall@10 against exact search on real vectors, for a grid of
 * expansion_add / expansion_search (issue 15: how the defaults were chosen).
 *
 *   npx tsx scripts/measure-graph-recall.ts vectors.json
 *
 * vectors.json: { turns: number[][], questions: number[][] } (e5 passage and query vectors).
 */
import { readFileSync } from 'node:fs';
import { measureGraphRecall } from '@elma/infra';

const { turns, questions } = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { turns: number[][]; questions: number[][] };
const vectors = turns.map((v) => Float32Array.from(v));
const queries = questions.map((v) => Float32Array.from(v));
for (const expansionAdd of [16, 64, 128]) {
  for (const expansionSearch of [16, 32, 64, 128]) {
    for (const candidates of [10, 64]) {
      const m = measureGraphRecall(vectors, queries, { expansionAdd, expansionSearch, candidates });
      process.stdout.write(
        `ef_add ${String(expansionAdd).padStart(3)}  ef_search ${String(expansionSearch).padStart(3)}  candidates ${String(candidates).padStart(2)}  recall@10 ${m.recall.toFixed(3)}  build ${m.buildMs.toFixed(0)} ms  query ${m.queryMs.toFixed(3)} ms\n`,
      );
    }
  }
}
