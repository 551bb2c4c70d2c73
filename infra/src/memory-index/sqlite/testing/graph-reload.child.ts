/**
 * Run as a child process by the vector graph tests: a crash inside usearch's
 * native code aborts the process, which a test can only observe from outside.
 * Builds a graph of `nodes` vectors, removes the first `share` of them the way
 * purge does (scrub), saves it, loads it into a fresh graph and searches it.
 * Prints `loaded <size>` and exits 0 when all of that survives.
 */
import { VectorGraph } from '../vector-graph';

const [path, nodesArg, shareArg] = process.argv.slice(2);
const nodes = Number(nodesArg);
const dimensions = 64;
let state = 7;
const random = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
const vectors = Array.from({ length: nodes }, () => Float32Array.from({ length: dimensions }, random));

const graph = new VectorGraph(dimensions);
graph.add(
  vectors.map((_, i) => i + 1),
  vectors,
);
graph.scrub(Array.from({ length: Math.floor(nodes * Number(shareArg)) }, (_, i) => i + 1));
graph.save(path);

const reloaded = new VectorGraph(dimensions);
if (!reloaded.load(path, graph.removed)) throw new Error('the saved graph did not load');
for (let i = 0; i < 20; i++) reloaded.search(vectors[nodes - 1 - i], 10);
process.stdout.write(`loaded ${reloaded.size}\n`);
