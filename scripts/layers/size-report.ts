/**
 * The figures the structure work is judged by, before and after: lines per
 * layer (package), the largest files, and the functions over 80 lines
 * (functions, methods, arrow functions; spec files and test support excluded).
 *
 *   npx tsx scripts/layers/size-report.ts [--top N]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '..', '..');
const PACKAGES = [
  'domain',
  'shared',
  'infra',
  'application',
  'activities',
  'workflows',
  'apps/api',
  'apps/worker',
  'apps/cli',
  'apps/runtime',
];
const LONG = 80;
const top = Number(process.argv[process.argv.indexOf('--top') + 1]) || 15;

function files(dir: string): string[] {
  try {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : name.endsWith('.ts') ? [path] : [];
    });
  } catch {
    return [];
  }
}

const isSpec = (path: string) => path.endsWith('.spec.ts');
/** Contract suites, fixtures and test harnesses: counted apart, not in the largest files or long functions. */
const isTestSupport = (path: string) => /(contract|fixtures|testing|harness)\.ts$|\.testing\.ts$|\/testing\/|\.child\.ts$/.test(path);
const lines = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const perPackage: string[] = [];
const sizes: { file: string; lines: number }[] = [];
const long: { where: string; name: string; lines: number }[] = [];

for (const pkg of PACKAGES) {
  const all = files(join(root, pkg, 'src'));
  if (all.length === 0) continue;
  let source = 0;
  let spec = 0;
  let support = 0;
  for (const path of all) {
    const text = readFileSync(path, 'utf8');
    const n = lines(text);
    const file = relative(root, path);
    if (isSpec(path)) {
      spec += n;
      continue;
    }
    if (isTestSupport(path)) {
      support += n;
      continue;
    }
    source += n;
    sizes.push({ file, lines: n });
    const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
        if (end - start + 1 > LONG) {
          const named = (node as ts.FunctionLikeDeclaration).name;
          const parent = node.parent;
          const name = named
            ? named.getText(sf)
            : ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)
              ? parent.name.getText(sf)
              : '(anonymous)';
          long.push({ where: `${file}:${start}`, name, lines: end - start + 1 });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  perPackage.push(`| ${pkg} | ${source} | ${support} | ${spec} |`);
}

console.log('## Lines per package (src)\n\n| package | source | test support | spec |\n|---|---:|---:|---:|');
console.log(perPackage.join('\n'));
console.log(`\n## Largest ${top} source files\n`);
for (const { file, lines: n } of sizes.sort((a, b) => b.lines - a.lines).slice(0, top)) console.log(`- ${file}: ${n}`);
console.log(`\n## Functions over ${LONG} lines (${long.length})\n`);
for (const f of long.sort((a, b) => b.lines - a.lines)) console.log(`- ${f.where} ${f.name}: ${f.lines}`);
