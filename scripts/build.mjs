// `npm run build`: the JavaScript that production runs (`node dist/elma.mjs api|worker|start`).
//
//   node scripts/build.mjs [--outdir DIR]      # default: dist/
//
// Writes into the output folder:
// - elma.mjs (+ .map): the CLI, every workspace package bundled in, every npm package left external
//   (imported from node_modules at run time, as under tsx; native modules and Nest's optional peers stay as
//   they are installed). esbuild, because it reads the code as tsx and vitest do (extensionless imports,
//   tsconfig `paths`, `experimentalDecorators`; no decorator metadata, which the code does not rely on:
//   apps/api/src/graphql/param-types.ts), so what runs in production is what the tests ran. Split at every
//   `import()` into chunks beside it (`<name>-<hash>.mjs`): each command is a chunk the CLI loads when it runs
//   (apps/cli/src/cli.ts), with the npm packages only it imports, so `elma token` does not load NestJS.
// - workflow-bundle.js: the Temporal workflows, bundled once here with Temporal's own bundler; a worker
//   started from the output folder loads it (`workflowBundle: { codePath }`) instead of bundling the
//   sources at start (apps/worker/src/worker.ts).
// - console.js: the compliance console's browser script (apps/api/src/console/bundle.mjs).
// - the files the code opens beside itself (`new URL('./x.mjs', import.meta.url)`, e.g. the byte-scan
//   child script), found in the bundled sources and copied next to elma.mjs, where the same expression
//   finds them (from elma.mjs and from every chunk: they are all in one folder).
// - inputs.json, last: every source file the output was made from and when the build began, by which the
//   `elma` bin tells whether this output is current (apps/cli/bin/bundle-state.mjs).
// The workspace aliases come from tsconfig.base.json `paths`: a new package needs no change here.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { buildConsole, CONSOLE_SCRIPT } from '../apps/api/src/console/bundle.mjs';
import { writeInputs } from '../apps/cli/bin/bundle-state.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The entry points, relative to the repository. */
const CLI_ENTRY = 'apps/cli/src/main.ts';
/** The embedded index's worker thread (infra/src/memory-index/thread): started from a file of its own. */
const INDEX_THREAD_ENTRY = 'infra/src/memory-index/thread/index-thread.ts';
const WORKFLOWS_ALIAS = '@elma/workflows';
/** The file names a built worker and the CLI look for beside themselves. */
export const CLI_FILE = 'elma.mjs';
export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';
/** The workflows with OpenTelemetry's workflow interceptors (apps/worker/src/worker.ts loads it when traces are on). */
const TRACED_WORKFLOW_BUNDLE_FILE = 'workflow-bundle-traced.js';
export const INDEX_THREAD_FILE = 'index-thread.mjs';
/** Sibling files not copied: the build writes them, or only the sources start them (under tsx). */
const NOT_COPIED = new Set([
  WORKFLOW_BUNDLE_FILE,
  TRACED_WORKFLOW_BUNDLE_FILE,
  INDEX_THREAD_FILE,
  'index-thread-boot.mjs',
  CONSOLE_SCRIPT,
  'bundle.mjs',
]);

/** `@elma/x` → absolute file, from tsconfig.base.json `paths` (exact keys; the build does not use wildcards). */
export function workspaceAliases() {
  const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8'));
  const paths = tsconfig.compilerOptions?.paths ?? {};
  const baseUrl = resolve(root, tsconfig.compilerOptions?.baseUrl ?? '.');
  const aliases = new Map();
  for (const [key, targets] of Object.entries(paths)) {
    if (key.includes('*')) throw new Error(`tsconfig.base.json paths: the build maps exact names only, not ${key}`);
    aliases.set(key, resolve(baseUrl, targets[0]));
  }
  return aliases;
}

/** Resolves the workspace packages through the aliases and leaves every other package external. */
function workspacePackages(aliases) {
  return {
    name: 'elma-workspace',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isAbsolute(args.path)) return undefined;
        const target = aliases.get(args.path);
        if (target) return { path: target };
        if (args.path.startsWith('@elma/')) return { errors: [{ text: `${args.path} is not in tsconfig.base.json paths` }] };
        return { path: args.path, external: true };
      });
    },
  };
}

/** `new URL('./file', import.meta.url)` with a literal relative path: a file the module opens beside itself. */
const SIBLING_FILE = /new URL\(\s*(['"])(\.\/[^'"]+)\1\s*,\s*import\.meta\.url\s*\)/g;

/** The sibling files the bundled sources name, as [absolute source, name in the output folder]. */
function siblingFiles(inputs) {
  const files = new Map();
  for (const input of inputs) {
    const source = readFileSync(input, 'utf8');
    for (const match of source.matchAll(SIBLING_FILE)) {
      const file = resolve(dirname(input), match[2]);
      if (match[2].includes('/', 2))
        throw new Error(`${relative(root, input)}: ${match[2]} is not beside the module; the bundle flattens folders`);
      const name = basename(file);
      const seen = files.get(name);
      if (seen && seen !== file)
        throw new Error(`two files named ${name} are opened beside their modules: ${relative(root, seen)}, ${relative(root, file)}`);
      files.set(name, file);
    }
  }
  return [...files].map(([name, file]) => [file, name]);
}

/** Files every output depends on beside the sources it bundles: the aliases, the compiler options, the build itself. */
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.base.json', 'scripts/build.mjs'];

export async function buildElma({ outdir = join(root, 'dist'), log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const startedAt = Date.now();
  const aliases = workspaceAliases();
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });

  const result = await build({
    absWorkingDir: root,
    entryPoints: { elma: join(root, CLI_ENTRY), 'index-thread': join(root, INDEX_THREAD_ENTRY) },
    outdir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: '[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    tsconfig: join(root, 'tsconfig.json'),
    plugins: [workspacePackages(aliases)],
    sourcemap: true,
    // Stack traces and Nest's messages name classes and functions as the sources do.
    keepNames: true,
    metafile: true,
    logLevel: 'warning',
  });
  // A `require()` in the sources would become esbuild's shim, which throws in an ES module at run time;
  // the sources use createRequire where they need one (apps/api/src/graphql/limits.ts).
  const outputs = Object.keys(result.metafile.outputs).filter((file) => file.endsWith('.mjs'));
  for (const file of outputs) {
    if (readFileSync(resolve(root, file), 'utf8').includes('__require(')) {
      throw new Error(`${basename(file)} calls require(): use createRequire(import.meta.url) in the sources`);
    }
  }
  // The image installs dependencies only (npm ci --omit=dev): an import of a devDependency, or of a package
  // no manifest names, would fail there at run time, so it fails the build here.
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const missing = new Set();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const { path, external } of output.imports) {
      if (!external || path.startsWith('node:')) continue;
      const name = path.startsWith('@') ? path.split('/').slice(0, 2).join('/') : path.split('/')[0];
      if (!manifest.dependencies?.[name]) missing.add(name);
    }
  }
  if (missing.size) throw new Error(`the bundle imports packages that are not dependencies in package.json: ${[...missing].join(', ')}`);
  // Every npm package is external, so the inputs are the workspace's own sources.
  const bundled = Object.keys(result.metafile.inputs).map((input) => resolve(root, input));

  const copied = [];
  const copiedSources = [];
  for (const [file, name] of siblingFiles(bundled)) {
    // A TypeScript sibling, or the index thread's boot file, is a path for the sources only (e.g. main.ts
    // spawned under tsx); the workflow bundle and the index thread are written by the build itself.
    if (/\.[cm]?tsx?$/.test(name) || NOT_COPIED.has(name)) continue;
    if (!existsSync(file)) throw new Error(`${relative(root, file)} is opened beside its module but does not exist`);
    copyFileSync(file, join(outdir, name));
    copied.push(name);
    copiedSources.push(file);
  }

  // The compliance console's browser script, which the API started from the sources compiles at start instead.
  const consoleScript = await buildConsole({ outfile: join(outdir, CONSOLE_SCRIPT) });

  // Temporal's bundler (webpack) on the workflows entry, as a worker would at start from the sources.
  const workflowsPath = aliases.get(WORKFLOWS_ALIAS);
  if (!workflowsPath) throw new Error(`tsconfig.base.json paths has no ${WORKFLOWS_ALIAS}`);
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const quiet = {
    trace() {},
    debug() {},
    info() {},
    log() {},
    warn: (message) => log(`[workflows] ${message}`),
    error: (message) => log(`[workflows] ${message}`),
  };
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet });
  writeFileSync(join(outdir, WORKFLOW_BUNDLE_FILE), code);
  // The same with OpenTelemetry's workflow interceptors, used only when traces are on (ELMA_OTEL_ENDPOINT).
  const traced = await bundleWorkflowCode({
    workflowsPath,
    logger: quiet,
    workflowInterceptorModules: [
      createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
    ],
  });
  writeFileSync(join(outdir, TRACED_WORKFLOW_BUNDLE_FILE), traced.code);

  // Written last: an output without it (a build that failed half-way) is never taken for current.
  writeInputs(outdir, root, startedAt, [
    ...BUILD_INPUTS,
    ...bundled,
    ...consoleScript.inputs,
    ...(await workflowInputs(workflowsPath, aliases)),
    ...copiedSources,
  ]);

  log(
    `[build] ${relative(process.cwd(), outdir) || '.'}: ${CLI_FILE} (${bundled.length} modules), ${INDEX_THREAD_FILE}, ${WORKFLOW_BUNDLE_FILE}, ${CONSOLE_SCRIPT}` +
      `${copied.length ? `, ${copied.join(', ')}` : ''} in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`,
  );
  return { outdir, cli: join(outdir, CLI_FILE), workflowBundle: join(outdir, WORKFLOW_BUNDLE_FILE), copied };
}

/**
 * The workspace files Temporal's bundler compiles into the workflow bundle: the same import graph, followed by
 * esbuild without writing anything (webpack does not say which files it read).
 */
async function workflowInputs(workflowsPath, aliases) {
  const { metafile } = await build({
    absWorkingDir: root,
    entryPoints: [workflowsPath],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    tsconfig: join(root, 'tsconfig.json'),
    plugins: [workspacePackages(aliases)],
    logLevel: 'silent',
  });
  return Object.keys(metafile.inputs).map((input) => resolve(root, input));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  buildElma({ outdir: values.outdir ? resolve(values.outdir) : undefined }).catch((error) => {
    process.stderr.write(`build failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
