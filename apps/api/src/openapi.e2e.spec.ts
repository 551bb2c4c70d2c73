import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './testing';

type Operation = {
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, unknown> }>;
  security?: Record<string, string[]>[];
};

let t: TestApp;
/** The document as served at /docs/openapi.json, fetched over HTTP like any client. */
let document: {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes?: Record<string, unknown> };
};

beforeAll(async () => {
  t = await startTestApp();
  document = (await (await fetch(`${t.url}/docs/openapi.json`)).json()) as typeof document;
});
afterAll(async () => t?.close());

const operations = () =>
  Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));

/** Every `pattern` in the document, wherever it is nested. */
function patterns(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => patterns(n, found));
  else if (node && typeof node === 'object')
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string') found.push(value);
      else patterns(value, found);
    }
  return found;
}

describe('the published OpenAPI document', () => {
  it('is a valid OpenAPI 3.0 description (swagger-parser)', async () => {
    expect(document.openapi).toMatch(/^3\.0\./);
    // Throws with every violation: undeclared path parameters, 3.1-only keywords in a 3.0 document, bad $refs...
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeTruthy();
  });

  it('declares the path parameter of every operation on a templated path', () => {
    const templated = operations().filter(({ path }) => path.includes('{id}'));
    expect(templated.length).toBeGreaterThanOrEqual(9);
    for (const { path, method, op } of templated) {
      expect(
        op.parameters?.some((p) => p.in === 'path' && p.name === 'id'),
        `${method} ${path}`,
      ).toBe(true);
    }
  });

  it('has only patterns that any regex engine compiles (no Unicode property escapes), so bodies can be generated', () => {
    const all = patterns(document);
    expect(all.length).toBeGreaterThan(0);
    for (const pattern of all) {
      expect(pattern).not.toMatch(/\\[pP]\{/);
      expect(() => new RegExp(pattern), pattern).not.toThrow();
    }
    // The control-character rule still stands, written out: a label with a newline is not a valid label.
    const labels = all.filter((p) => p.includes('\\u0000-\\u001f'));
    expect(labels.length).toBeGreaterThan(0);
    expect(new RegExp(labels[0]).test('a\nb')).toBe(false);
    expect(new RegExp(labels[0]).test('support 支持')).toBe(true);
  });

  it('documents the bearer scheme and the problem+json errors of every operation', () => {
    expect(document.components.securitySchemes).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }),
    });
    const open = ['/health', '/.well-known/elma-keys', '/v1/sign-in', '/v1/sign-in/token'];
    for (const { path, method, op } of operations()) {
      const label = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op.responses);
      expect(
        statuses.filter((s) => s.startsWith('2')),
        label,
      ).toHaveLength(1);
      expect(statuses, label).toEqual(expect.arrayContaining(['414', '431']));
      if (!open.includes(path)) {
        expect(op.security, label).toEqual([{ bearer: [] }]);
        expect(statuses, label).toEqual(expect.arrayContaining(['401', '503', '507']));
      }
      if (op.requestBody) expect(statuses, label).toEqual(expect.arrayContaining(['400', '413', '415', '422']));
      for (const status of statuses.filter((s) => Number(s) >= 400 && !(path === '/health' && s === '503'))) {
        expect(Object.keys(op.responses[status].content ?? {}), `${label} ${status}`).toEqual(['application/problem+json']);
      }
    }
    expect(Object.keys(document.paths['/v1/events'].post.responses)).toContain('409');
  });
});
