import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { clientErrorResponse } from './problem.filter';
import { INTERNAL, STATUS_OF_CODE } from './problem';

/** The one form of every error code a client can see: `AREA.CODE`, upper case. */
const FORM = /^[A-Z][A-Z0-9_]*\.[A-Z][A-Z0-9_]*$/;

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const SOURCES = ['domain/src', 'shared/src', 'infra/src', 'application/src', 'activities/src', 'workflows/src', 'apps'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * Every place the code base sets a code a client can receive: domain errors
 * (`super('X'` in a class extending DomainError, `new DomainError('X'`),
 * error classes with a `code` field, the codes the API answers itself
 * (`code: 'X'` in apps/api) and the GraphQL limits. Codes of libraries the
 * code reads (FST_*, MER_*, SQLITE_*, ENOSPC) are inputs, not answers.
 */
function emittedCodes(): Map<string, string> {
  const found = new Map<string, string>();
  const add = (code: string, where: string) => found.set(code, where);
  for (const file of SOURCES.flatMap((dir) => sourceFiles(join(root, dir)))) {
    const text = readFileSync(file, 'utf8');
    const where = relative(root, file);
    for (const [, body] of text.matchAll(/extends DomainError\s*\{([\s\S]*?)(?=\n(?:export )?(?:class|function|const) |$)/g)) {
      for (const [, code] of body.matchAll(/super\(\s*'([^']+)'/g)) add(code, where);
      // A code that is not a literal could not be checked here, unless it is typed by a union of literal codes in the same file.
      const typed = [...text.matchAll(/type \w*Code\s*=([^;]+);/g)].flatMap(([, union]) =>
        [...union.matchAll(/'([^']+)'/g)].map(([, code]) => code),
      );
      for (const [call] of body.matchAll(/super\(\s*[^'\s)][^,)]*/g)) {
        if (typed.length > 0 && /^super\(\s*code$/.test(call)) typed.forEach((code) => add(code, where));
        else add(`(not a literal: ${call})`, where);
      }
    }
    for (const [, code] of text.matchAll(/new DomainError\(\s*'([^']+)'/g)) add(code, where);
    for (const [, code] of text.matchAll(/readonly code = '([^']+)'/g)) add(code, where);
    if (where.startsWith('apps/api/')) {
      for (const [, code] of text.matchAll(/\bcode: '([^']+)'/g)) if (!/^(FST|MER|SQLITE|E[A-Z]+$)/.test(code)) add(code, where);
      for (const [, code] of text.matchAll(/(?:limitError|transport)\(\s*'([^']+)'/g)) add(code, where);
      for (const [, code] of text.matchAll(/\?\s*'(GRAPHQL\.[^']+)'|:\s*'(GRAPHQL\.[^']+)'/g)) if (code) add(code, where);
    }
  }
  for (const code of Object.keys(STATUS_OF_CODE)) add(code, 'apps/api/src/http/problem.ts (status table)');
  add(INTERNAL, 'apps/api/src/http/problem.ts');
  return found;
}

describe('error codes', () => {
  it('every code the code base can emit has the form AREA.CODE', () => {
    const codes = emittedCodes();
    // The scan must see the codes of every layer, or it proves nothing.
    for (const known of [
      'MEMORY.NOT_FOUND',
      'HYGIENE.SECRET_DETECTED',
      'AUTH.TENANT_MISMATCH',
      'REQUEST.HEADERS_TOO_LARGE',
      'GRAPHQL.DEPTH_LIMIT',
      'GRAPHQL.PARSE_FAILED',
      'CONFIG.INVALID',
      'SERVER.INTERNAL',
    ]) {
      expect(codes.has(known), known).toBe(true);
    }
    const malformed = [...codes].filter(([code]) => !FORM.test(code)).map(([code, where]) => `${code} (${where})`);
    expect(malformed).toEqual([]);
  });

  it('the errors Node raises before a request exists get a code of that form', () => {
    for (const code of ['HPE_HEADER_OVERFLOW', 'ERR_HTTP_REQUEST_TIMEOUT', 'ERR_HTTP_HEADERS_TIMEOUT', 'HPE_INVALID_METHOD', undefined]) {
      const response = clientErrorResponse({ code });
      const problem = JSON.parse(response.split('\r\n\r\n')[1]) as { code: string; status: number };
      expect(problem.code).toMatch(FORM);
      expect(response).toMatch(new RegExp(`^HTTP/1.1 ${problem.status} `));
    }
    expect(clientErrorResponse({ code: 'ERR_HTTP_REQUEST_TIMEOUT' })).toMatch(/^HTTP\/1.1 408 .*\r\n[\s\S]*"code":"REQUEST.TIMEOUT"/);
  });
});
