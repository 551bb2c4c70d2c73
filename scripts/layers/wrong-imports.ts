/**
 * Lists every import inside infra/src that runs against the layering of
 * scripts/layers/infra-layers.mjs, with file:line, using the TypeScript
 * compiler's parser (static imports, re-exports, dynamic import()).
 *
 *   npx tsx scripts/layers/wrong-imports.ts            # markdown report
 *   npx tsx scripts/layers/wrong-imports.ts --json
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { ALLOWED, INFRA_FILES, kindOf } from './infra-layers.mjs';

const root = resolve(import.meta.dirname, '..', '..');
const rel = (path: string) => relative(root, path).split('\\').join('/');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ts|mts|mjs)$/.test(name) ? [path] : [];
  });
}

function resolveRelative(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts'), base.replace(/\.js$/, '.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

interface Edge {
  file: string;
  line: number;
  spec: string;
  target: string;
  typeOnly: boolean;
}

function importsOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const add = (node: ts.Node, spec: string, typeOnly: boolean) => {
    if (!spec.startsWith('.')) return;
    const target = resolveRelative(file, spec);
    if (!target) return;
    edges.push({
      file: rel(file),
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      spec,
      target: rel(target),
      typeOnly,
    });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node, node.moduleSpecifier.text, Boolean(node.importClause?.isTypeOnly));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node, node.moduleSpecifier.text, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) add(node, arg.text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

const isSpec = (path: string) => /\.spec\.ts$/.test(path);
const all = files(join(root, 'infra', 'src'))
  .map(rel)
  .sort();
const unclassified = all.filter((f) => !isSpec(f) && !f.endsWith('.mjs') && !kindOf(f));

/**
 * Where a file sits today, by its folder alone: a helper in recall/ is, to a
 * reader of the tree, part of the recall use case. An import that is fine by
 * the file's own kind but lands in a folder of a higher layer is "wrong way
 * today" (what the issue counts); fixing it means moving the helper.
 */
const FOLDER_KIND: Record<string, string> = {
  ingest: 'application',
  memory: 'application',
  recall: 'application',
  erasure: 'application',
  governance: 'application',
  consolidation: 'application',
  projection: 'application',
  audit: 'application',
  policy: 'application',
  'legal-hold': 'application',
  sealing: 'application',
  runtime: 'root',
};
const folderKind = (path: string) => FOLDER_KIND[path.split('/')[2]] ?? kindOf(path)?.kind;
const RANK: Record<string, number> = { shared: 0, adapter: 1, application: 2, root: 3, test: 4 };
const today = all
  .filter((f) => !isSpec(f))
  .flatMap((f) => importsOf(join(root, f)))
  .flatMap((edge) => {
    const from = kindOf(edge.file)?.kind;
    const to = folderKind(edge.target);
    if (!from || !to || from === 'test' || from === 'root') return [];
    // a use case may use another use case's folder; flag only imports into a higher layer's folder
    if (RANK[to] <= RANK[from] || (from === 'shared' && to === 'shared')) return [];
    if (from === 'application' && to === 'application') return [];
    return [{ ...edge, fromKind: from, toKind: `${to} folder`, targetNow: kindOf(edge.target)?.target }];
  });

const wrong = all
  .filter((f) => !isSpec(f))
  .flatMap((f) => importsOf(join(root, f)))
  .flatMap((edge) => {
    const from = kindOf(edge.file);
    const to = kindOf(edge.target);
    if (!from || !to || (ALLOWED as Record<string, string[]>)[from.kind].includes(to.kind)) return [];
    return [{ ...edge, fromKind: from.kind, toKind: to.kind }];
  });

if (process.argv.includes('--json')) {
  console.log(JSON.stringify({ today, wrong, unclassified }, null, 2));
} else {
  const lines = (f: string) => readFileSync(join(root, f), 'utf8').split('\n').length - 1;
  console.log('## infra/src files by kind\n');
  console.log('| file | lines | kind | target |\n|---|---:|---|---|');
  const totals: Record<string, number> = {};
  for (const f of all.filter((x) => !isSpec(x))) {
    const k = kindOf(f) ?? { kind: f.endsWith('.mjs') ? 'adapter' : '?', target: '(with its .ts)' };
    totals[k.kind] = (totals[k.kind] ?? 0) + lines(f);
    console.log(`| ${f} | ${lines(f)} | ${k.kind} | ${k.target} |`);
  }
  const specLines = all.filter(isSpec).reduce((n, f) => n + lines(f), 0);
  console.log(
    `\nLines by kind (non-spec): ${Object.entries(totals)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}; spec files ${specLines}.\n`,
  );
  const grouped = (pred: (e: (typeof wrong)[number]) => boolean, title: string) => {
    const rows = wrong.filter(pred);
    console.log(`## ${title} (${rows.length})\n`);
    for (const e of rows)
      console.log(`- ${e.file}:${e.line} (${e.fromKind}) -> ${e.target} (${e.toKind})${e.typeOnly ? ' [type only]' : ''}`);
    console.log('');
  };
  console.log(`## Wrong way as the tree is today: a file imports from a folder of a higher layer (${today.length})\n`);
  for (const e of today)
    console.log(
      `- ${e.file}:${e.line} (${e.fromKind}) -> ${e.target} (${e.toKind}; moves to ${e.targetNow})${e.typeOnly ? ' [type only]' : ''}`,
    );
  console.log("\nAfter the planned moves (by each file's own kind):\n");
  grouped(
    (e) => e.fromKind === 'adapter' || e.fromKind === 'shared',
    'Downward layers importing upward (adapter/shared -> application/root)',
  );
  grouped((e) => e.fromKind === 'application' && e.toKind === 'root', 'Use cases importing the composition root');
  grouped(
    (e) => e.fromKind === 'application' && e.toKind === 'adapter',
    'Use cases importing a concrete adapter (needs a port, or the helper moves to shared)',
  );
  if (unclassified.length) console.log(`Unclassified: ${unclassified.join(', ')}`);
  console.log(`Rules: ${INFRA_FILES.length} path rules; allowed: ${JSON.stringify(ALLOWED)}`);
}
