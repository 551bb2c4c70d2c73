import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED_TYPES_FILE, generateClientTypes } from '../../../scripts/client/openapi-types';

/** The first line where two texts differ, with its number, or undefined when they are equal. */
function firstDifference(committed: string, fresh: string): string | undefined {
  const a = committed.split('\n');
  const b = fresh.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    if (a[i] !== b[i]) return `line ${i + 1}: committed ${JSON.stringify(a[i])}, served ${JSON.stringify(b[i])}`;
  return undefined;
}

describe('the client types generated from the OpenAPI document', () => {
  it('are what a running ELMA serves at /docs/openapi.json now (else: npm run client:generate, and commit the file)', async () => {
    const fresh = await generateClientTypes();
    expect(firstDifference(readFileSync(GENERATED_TYPES_FILE, 'utf8'), fresh)).toBeUndefined();
  });
});
