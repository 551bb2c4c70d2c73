import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ELMA_VERSION } from './version';

describe('ELMA_VERSION', () => {
  it('is the version of the root package.json', () => {
    const root = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(ELMA_VERSION).toBe(root.version);
  });
});
