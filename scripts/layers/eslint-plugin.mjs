// A local ESLint rule for the layers inside infra/src, the part
// @nx/enforce-module-boundaries cannot see while adapters and use cases share
// one package. It resolves each relative import and checks it against
// infra-layers.mjs: an adapter or shared helper may not import a file that sits
// in a use-case or composition-root folder, and a use case may not import the
// composition root. Remove it when infra/ holds adapters only.
import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kindOf } from './infra-layers.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FOLDER_KIND = {
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
const RANK = { shared: 0, adapter: 1, application: 2, root: 3 };
const rel = (path) => relative(root, path).split('\\').join('/');

function resolveRelative(fromFile, spec) {
  const base = resolve(dirname(fromFile), spec);
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

const infraLayers = {
  meta: {
    type: 'problem',
    docs: { description: 'Inside infra/src, imports point down: shared <- adapter <- use case <- composition root.' },
    schema: [],
    messages: {
      upward: 'A {{fromKind}} file must not import {{target}}, which sits in a {{toKind}} folder; it moves to {{destination}}.',
    },
  },
  create(context) {
    const file = rel(context.filename);
    const from = kindOf(file)?.kind;
    if (!file.startsWith('infra/src/') || !from || !(from in RANK) || from === 'root') return {};
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const resolved = resolveRelative(context.filename, spec);
      if (!resolved) return;
      const target = rel(resolved);
      const toKind = FOLDER_KIND[target.split('/')[2]] ?? kindOf(target)?.kind;
      if (!toKind || !(toKind in RANK) || RANK[toKind] <= RANK[from]) return;
      if (from === 'application' && toKind === 'application') return;
      context.report({
        node,
        messageId: 'upward',
        data: { fromKind: from, target, toKind, destination: kindOf(target)?.target ?? '?' },
      });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
    };
  },
};

export default { rules: { 'infra-layers': infraLayers } };
