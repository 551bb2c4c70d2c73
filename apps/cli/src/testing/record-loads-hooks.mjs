// Module hooks of ./record-loads.mjs (they run on a thread of their own): appends each resolved URL to the file.
import { appendFileSync } from 'node:fs';

/** @type {string} */
let out;

/** @param {{ out: string }} data */
export function initialize(data) {
  out = data.out;
}

/**
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => Promise<{ url: string }>} nextResolve
 */
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  appendFileSync(out, `${result.url}\n`);
  return result;
}
