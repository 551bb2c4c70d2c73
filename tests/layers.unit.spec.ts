import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The dependency direction of docs/architecture.md#layers-and-packages, checked by a tool rather than by
 * memory: apps -> workflows -> activities -> application -> shared -> domain,
 * and apps -> infra -> shared -> domain. Spec files and test
 * support (contract suites, fixtures, testing/ folders) are exempt: tests may
 * wire anything.
 */
const root = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    const testSupport = name.includes('contract') || name.includes('fixtures') || path.includes('/testing/');
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') && !testSupport ? [path] : [];
  });
}

interface Import {
  file: string;
  from: string;
  typeOnly: boolean;
}

function imports(layer: string): Import[] {
  return sources(join(root, layer, 'src')).flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    return [...text.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)].map((m) => ({
      file: relative(root, file),
      from: m[2],
      typeOnly: Boolean(m[1]),
    }));
  });
}

const ours = (i: Import) => i.from.startsWith('@elma/');

describe('layering', () => {
  /**
   * Packages the domain may use: pure functions of their arguments, no I/O, no globals. zod (schemas) and
   * porter2 (the English Snowball stemmer of the BM25 text analysis; one file, no dependencies).
   */
  const PURE_PACKAGES = ['zod', 'porter2'];

  it('keeps domain pure: zod, the stemmer and its own files only, no node modules', () => {
    const offending = imports('domain').filter((i) => !i.from.startsWith('.') && !PURE_PACKAGES.includes(i.from));
    expect(offending).toEqual([]);
  });

  it('keeps clocks and randomness out of domain', () => {
    const offending = sources(join(root, 'domain', 'src')).filter((file) =>
      /Date\.now\(|new Date\(\)|Math\.random\(|randomUUID\(/.test(readFileSync(file, 'utf8')),
    );
    expect(offending).toEqual([]);
  });

  it('lets shared depend on domain only', () => {
    expect(imports('shared').filter((i) => ours(i) && i.from !== '@elma/domain')).toEqual([]);
  });

  it('lets infra depend on domain and shared only', () => {
    expect(imports('infra').filter((i) => ours(i) && !['@elma/domain', '@elma/shared'].includes(i.from))).toEqual([]);
  });

  it('lets the use cases depend on domain and shared only (adapters come in through domain ports)', () => {
    expect(imports('application').filter((i) => ours(i) && !['@elma/domain', '@elma/shared'].includes(i.from))).toEqual([]);
  });

  it('lets activities depend on domain, shared and the use cases only', () => {
    expect(imports('activities').filter((i) => ours(i) && !['@elma/domain', '@elma/shared', '@elma/application'].includes(i.from))).toEqual(
      [],
    );
  });

  it('lets workflows import the deterministic Temporal packages and only types of anything else', () => {
    const offending = imports('workflows').filter(
      (i) => !i.from.startsWith('.') && !['@temporalio/workflow', '@temporalio/common'].includes(i.from) && !i.typeOnly,
    );
    expect(offending).toEqual([]);
  });

  it('keeps the client SDK standalone: nothing of ours, no package, no Node module (it runs wherever fetch does)', () => {
    const offending = imports('clients/typescript').filter((i) => !i.file.endsWith('/testing.ts') && !i.from.startsWith('./'));
    expect(offending).toEqual([]);
  });

  it('never lets a lower layer import an app', () => {
    const lower = ['domain', 'shared', 'infra', 'application', 'activities', 'workflows'].flatMap(imports);
    expect(lower.filter((i) => /^@elma\/(api|worker|cli|runtime)$/.test(i.from))).toEqual([]);
  });
});
