#!/usr/bin/env node
// The `elma` command: `npx elma <command>` anywhere in the project (npm links node_modules/.bin/elma here, the
// `bin` of apps/cli/package.json), and `npm run elma -- <command>`. Plain JavaScript, so that choosing costs
// nothing: it runs the build's dist/elma.mjs when that build is current (`npm install` makes it, so does
// `npm run build`), else the TypeScript sources under tsx: never a build older than the sources.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildState } from './bundle-state.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const dist = join(root, 'dist');
const state = buildState(dist, root);

if (state.current) {
  await import(pathToFileURL(join(dist, 'elma.mjs')).href);
} else {
  // Said on a terminal only: output a script reads stays the command's own.
  if (process.stderr.isTTY) {
    process.stderr.write(`elma: running the sources under tsx (${state.reason}); \`npm run build\` makes commands start at once\n`);
  }
  // The compiler options (decorators, paths) whatever folder the command is typed in.
  process.env.TSX_TSCONFIG_PATH ??= join(root, 'tsconfig.json');
  await import('tsx');
  await import(pathToFileURL(join(root, 'apps', 'cli', 'src', 'main.ts')).href);
}
