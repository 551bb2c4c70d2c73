// Root `postinstall`, last step: the build the `elma` bin runs (apps/cli/bin/elma.mjs), so that `npx elma` starts
// at once from the first command after `npm install` (about 6 s here, once; `npm run build` is the same build).
// Skipped when the build is current. Never fails the install: without a build the bin runs the sources under tsx.
// Set ELMA_SKIP_BUILD=1 to skip (the Docker image installs before it copies the sources, and builds in a stage of
// its own).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

if (process.env.ELMA_SKIP_BUILD === '1' || !existsSync(join(root, 'apps', 'cli', 'src', 'main.ts'))) {
  process.exit(0);
}

try {
  const { buildState } = await import('../apps/cli/bin/bundle-state.mjs');
  if (!buildState(join(root, 'dist'), root).current) {
    const { buildElma } = await import('./build.mjs');
    await buildElma({ log: (line) => process.stderr.write(`[elma] ${line.replace(/^\[build\] /, 'build ')}\n`) });
  }
} catch (err) {
  process.stderr.write(
    `[elma] warning: no build for the elma command (${err instanceof Error ? err.message : String(err)}); it runs the sources instead, ` +
      'run `npm run build` to make it start at once\n',
  );
}
