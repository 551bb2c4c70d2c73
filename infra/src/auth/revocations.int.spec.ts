import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteTokenRevocations } from './revocations';

describe('token deny list on disk', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'elma-revocations-'));
    path = join(dir, 'tokens.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('survives reopening, is seen by another connection at once, and is per tenant', () => {
    const one = new SqliteTokenRevocations(path);
    const two = new SqliteTokenRevocations(path);
    one.revoke('acme', 'jti-1', 2_000, 1_000);
    expect(two.isRevoked('acme', 'jti-1', 1_500)).toBe(true);
    expect(two.isRevoked('globex', 'jti-1', 1_500)).toBe(false);
    one.close();
    two.close();
    const reopened = new SqliteTokenRevocations(path);
    expect(reopened.isRevoked('acme', 'jti-1', 1_500)).toBe(true);
    reopened.close();
  });

  it('an entry lives until its expiry only, is dropped after, and a second revocation keeps the later expiry', () => {
    const list = new SqliteTokenRevocations(path);
    expect(list.revoke('acme', 'a', 2_000, 1_000)).toBe(2_000);
    // An earlier end asked later leaves the entry as it was, and says so.
    expect(list.revoke('acme', 'a', 1_500, 1_000)).toBe(2_000);
    expect(list.isRevoked('acme', 'a', 2_000)).toBe(true);
    expect(list.isRevoked('acme', 'a', 2_001)).toBe(false);
    expect(list.active(1_000)).toBe(1);
    // The next revocation purges what has expired.
    list.revoke('acme', 'b', 5_000, 3_000);
    expect(list.active(0)).toBe(1);
    list.close();
  });
});
