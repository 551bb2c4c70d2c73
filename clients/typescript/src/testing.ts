import { readFileSync } from 'node:fs';

/**
 * Whether the committed generated types have `GET path` (the listing endpoints arrive with their own change;
 * their client tests run once the document, and so the regenerated types, have them).
 */
export function documentHasGet(path: string): boolean {
  const generated = readFileSync(new URL('./openapi.gen.ts', import.meta.url), 'utf8');
  const at = generated.indexOf(`\n  '${path}': {`);
  if (at < 0) return false;
  const entry = generated.slice(at, generated.indexOf('\n  };', at));
  return /\n {4}get: operations\[/.test(entry);
}
