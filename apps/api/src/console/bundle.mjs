// The compliance console's browser script, compiled from ui/main.ts by esbuild (one file, no imports left, no
// source map: the page loads nothing but its own three files). `npm run build` writes it beside elma.mjs as
// console.js; the API started from the sources (tsx, vitest) compiles it in memory at start (console/assets.ts).
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The file name the built script has beside elma.mjs, where console/assets.ts looks for it. */
export const CONSOLE_SCRIPT = 'console.js';

/** Compiles the console; writes `outfile` when given, and returns the script either way. */
export async function bundleConsole({ outfile } = {}) {
  return (await buildConsole({ outfile })).text;
}

/**
 * The same, with the source files compiled into it (absolute paths), which the build lists among the inputs
 * of its output (scripts/build.mjs).
 * @param {{ outfile?: string }} [options]
 * @returns {Promise<{ text: string; inputs: string[] }>}
 */
export async function buildConsole({ outfile } = {}) {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./ui/main.ts', import.meta.url))],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome109', 'firefox115', 'safari16'],
    charset: 'utf8',
    legalComments: 'none',
    minify: false,
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const text = result.outputFiles[0].text;
  if (outfile) {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(outfile, text);
  }
  const { resolve } = await import('node:path');
  return { text, inputs: Object.keys(result.metafile.inputs).map((input) => resolve(input)) };
}
