import { existsSync, readFileSync } from 'node:fs';

export interface ConsoleAsset {
  type: string;
  body: Buffer;
}

/** The console's three files by name: the page, its style sheet and its script. */
export type ConsoleAssets = Map<string, ConsoleAsset>;

let loaded: Promise<ConsoleAssets> | undefined;

/**
 * The console's files, read once per process. The page and the style sheet sit beside this module (and are
 * copied beside elma.mjs by the build); the script is the compiled `console.js` there, or, when the API runs
 * from the sources, compiled now from ui/main.ts with esbuild (a development dependency the build has used).
 */
export function consoleAssets(): Promise<ConsoleAssets> {
  loaded ??= load();
  return loaded;
}

async function load(): Promise<ConsoleAssets> {
  return new Map([
    ['index.html', { type: 'text/html; charset=utf-8', body: readFileSync(new URL('./console.html', import.meta.url)) }],
    ['console.css', { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./console.css', import.meta.url)) }],
    ['console.js', { type: 'text/javascript; charset=utf-8', body: await script() }],
  ]);
}

async function script(): Promise<Buffer> {
  const built = new URL('./console.js', import.meta.url);
  if (existsSync(built)) return readFileSync(built);
  // A computed specifier: the production bundle must not pull the bundler (and esbuild) in; it ships console.js.
  const bundler = new URL('./bundle.mjs', import.meta.url).href;
  const { bundleConsole } = (await import(bundler)) as typeof import('./bundle.mjs');
  return Buffer.from(await bundleConsole(), 'utf8');
}
