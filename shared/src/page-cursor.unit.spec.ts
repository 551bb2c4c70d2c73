import { describe, expect, it } from 'vitest';
import { PageCursors } from './page-cursor';

const key = Buffer.alloc(32, 7);
const scope = ['memories', 'acme', 'agent-1', 'kind=semantic'];
const position = { recordedAt: '2026-01-01T00:00:00.000Z', id: 'mem_1' };
const asPosition = (value: unknown) =>
  typeof value === 'object' && value !== null && 'id' in value ? (value as typeof position) : undefined;

describe('page cursors', () => {
  it('given a cursor sealed for a listing, when the same listing opens it, then it gives back the position', () => {
    const cursors = new PageCursors(key);
    const cursor = cursors.seal(scope, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(cursors.open(scope, cursor, asPosition)).toEqual(position);
  });

  it('refuses a cursor of another tenant, caller or filter, of another key, altered, or made up', () => {
    const cursors = new PageCursors(key);
    const cursor = cursors.seal(scope, position);
    const [payload, mac] = cursor.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ ...position, id: 'mem_2' })).toString('base64url');
    const refused = [
      () => cursors.open(['memories', 'globex', 'agent-1', 'kind=semantic'], cursor, asPosition),
      () => cursors.open(['memories', 'acme', 'agent-2', 'kind=semantic'], cursor, asPosition),
      () => cursors.open(['memories', 'acme', 'agent-1', ''], cursor, asPosition),
      () => new PageCursors(Buffer.alloc(32, 8)).open(scope, cursor, asPosition),
      () => cursors.open(scope, `${forgedPayload}.${mac}`, asPosition),
      () => cursors.open(scope, `${payload}.${mac.slice(0, -2)}`, asPosition),
      () => cursors.open(scope, `${payload}.${mac}.x`, asPosition),
      () => cursors.open(scope, payload, asPosition),
      () => cursors.open(scope, '', asPosition),
      () => cursors.open(scope, 'bm90IGEgY3Vyc29y', asPosition),
    ];
    for (const open of refused) expect(open).toThrow(expect.objectContaining({ code: 'REQUEST.INVALID_CURSOR' }));
  });

  it('refuses a validly sealed value that is not a position', () => {
    const cursors = new PageCursors(key);
    expect(() => cursors.open(scope, cursors.seal(scope, 42), asPosition)).toThrow(
      expect.objectContaining({ code: 'REQUEST.INVALID_CURSOR' }),
    );
  });
});
