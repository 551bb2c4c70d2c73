/**
 * The package picture of docs/architecture.md against the Nx project graph.
 *
 *   npx tsx scripts/docs/package-graph.ts            prints the graph's edges as a mermaid block
 *   npx tsx scripts/docs/package-graph.ts --check    exits 1, listing the differences, when the picture's edges differ
 *   npx tsx scripts/docs/package-graph.ts --write    rewrites the picture from the graph
 *
 * Only edges between the workspace's own projects count; an edge drawn dotted
 * (`-. types only .->`) is an edge like any other.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createProjectGraphAsync } from '@nx/devkit';

const root = resolve(import.meta.dirname, '..', '..');
const DOC = join(root, 'docs', 'architecture.md');
/** The first mermaid block after this heading is the package picture. */
const SECTION = '## Layers and packages';
/** Bottom to top, so the picture reads as layers. */
const ORDER = ['domain', 'shared', 'infra', 'application', 'activities', 'workflows', 'runtime', 'worker', 'api', 'cli'];
/** Edges drawn dotted, with their label. */
const DOTTED: Record<string, string> = { 'workflows->activities': 'types only' };

const short = (name: string) => name.replace(/^@elma\//, '');

async function graphEdges(): Promise<{ nodes: Map<string, { root: string; tags: string[] }>; edges: Set<string> }> {
  const graph = await createProjectGraphAsync({ exitOnError: false });
  const nodes = new Map<string, { root: string; tags: string[] }>();
  for (const [name, node] of Object.entries(graph.nodes)) {
    nodes.set(short(name), { root: node.data.root, tags: (node.data.tags ?? []).filter((t) => t.startsWith('type:')) });
  }
  const edges = new Set<string>();
  for (const [source, deps] of Object.entries(graph.dependencies)) {
    if (!graph.nodes[source]) continue;
    for (const dep of deps) if (graph.nodes[dep.target] && dep.target !== source) edges.add(`${short(source)}->${short(dep.target)}`);
  }
  return { nodes, edges };
}

function render(nodes: Map<string, { root: string; tags: string[] }>, edges: Set<string>): string {
  const rank = (n: string) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  const names = [...nodes.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const lines = ['flowchart BT'];
  for (const name of names) {
    const { root: path, tags } = nodes.get(name)!;
    const where = path.startsWith('apps/') || path.startsWith('clients/') ? `${path} · ` : '';
    lines.push(`  ${name}["@elma/${name}<br/>${where}${tags.join(', ')}"]`);
  }
  lines.push('');
  const sorted = [...edges].sort((a, b) => {
    const [sa, ta] = a.split('->');
    const [sb, tb] = b.split('->');
    return rank(sa) - rank(sb) || sa.localeCompare(sb) || rank(ta) - rank(tb) || ta.localeCompare(tb);
  });
  for (const edge of sorted) {
    const [s, t] = edge.split('->');
    lines.push(DOTTED[edge] ? `  ${s} -. ${DOTTED[edge]} .-> ${t}` : `  ${s} --> ${t}`);
  }
  return lines.join('\n');
}

/** The picture's block: its text and where it sits in the document. */
function pictureIn(doc: string): { start: number; end: number; text: string } {
  const section = doc.indexOf(SECTION);
  if (section < 0) throw new Error(`no "${SECTION}" in ${DOC}`);
  const open = doc.indexOf('```mermaid\n', section);
  if (open < 0) throw new Error('no mermaid block in the layers section');
  const start = open + '```mermaid\n'.length;
  const end = doc.indexOf('```', start);
  return { start, end, text: doc.slice(start, end) };
}

function edgesOf(picture: string): Set<string> {
  const edges = new Set<string>();
  for (const line of picture.split('\n')) {
    const m = /^\s*([\w-]+)\s*(?:-->|-\.[^.]*\.->)\s*([\w-]+)\s*$/.exec(line);
    if (m) edges.add(`${m[1]}->${m[2]}`);
  }
  return edges;
}

const { nodes, edges } = await graphEdges();
const mode = process.argv[2];
if (mode === '--check' || mode === '--write') {
  const doc = readFileSync(DOC, 'utf8');
  const picture = pictureIn(doc);
  const drawn = edgesOf(picture.text);
  const missing = [...edges].filter((e) => !drawn.has(e));
  const extra = [...drawn].filter((e) => !edges.has(e));
  if (mode === '--write') {
    writeFileSync(DOC, doc.slice(0, picture.start) + render(nodes, edges) + '\n' + doc.slice(picture.end));
    console.log(`docs/architecture.md: picture rewritten (${edges.size} edges; was missing ${missing.length}, had ${extra.length} more)`);
  } else if (missing.length + extra.length === 0) {
    console.log(`docs/architecture.md matches the Nx project graph (${edges.size} edges)`);
  } else {
    for (const e of missing) console.log(`in nx graph, not in the picture: ${e}`);
    for (const e of extra) console.log(`in the picture, not in nx graph: ${e}`);
    process.exitCode = 1;
  }
} else {
  console.log('```mermaid\n' + render(nodes, edges) + '\n```');
}
