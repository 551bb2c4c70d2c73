import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveTenantKey, openJson, sealJson, unwrapKey, wrapKey, type Sealed } from './envelope';

const key = () => new Uint8Array(randomBytes(32));

function flipFirstByte(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[0] ^= 0x01;
  return bytes.toString('base64');
}

describe('sealed JSON', () => {
  it('opens to the value that was sealed', () => {
    const k = key();
    const value = { text: 'Ada prefers tea – 日本語', n: 3, tags: ['a'], nested: { ok: true, none: null } };

    const sealed = sealJson(k, value, 'memory-t1-m1');

    expect(openJson(k, sealed, 'memory-t1-m1')).toEqual(value);
    expect(JSON.parse(JSON.stringify(sealed))).toEqual(sealed);
    expect(sealed).toMatchObject({ v: 1, alg: 'A256GCM' });
  });

  it('does not contain the plaintext and differs every time', () => {
    const k = key();

    const a = sealJson(k, 'a very recognisable plaintext', 'aad');
    const b = sealJson(k, 'a very recognisable plaintext', 'aad');

    expect(JSON.stringify(a)).not.toContain('recognisable');
    expect(a.iv).not.toBe(b.iv);
    expect(a.ct).not.toBe(b.ct);
  });

  it.each(['ct', 'tag', 'iv'] as const)('detects a tampered %s', (field) => {
    const k = key();
    const sealed = sealJson(k, { secret: 'x' }, 'aad');
    const tampered: Sealed = { ...sealed, [field]: flipFirstByte(sealed[field]) };

    expect(() => openJson(k, tampered, 'aad')).toThrow(expect.objectContaining({ code: 'CRYPTO.INTEGRITY_CHECK_FAILED' }));
  });

  it('refuses an envelope of a newer format by name (FORMAT.TOO_NEW), neither misreading it nor calling it tampered', () => {
    const k = key();
    const newer = { ...sealJson(k, { secret: 'x' }, 'aad'), v: 2 } as unknown as Sealed;

    expect(() => openJson(k, newer, 'aad')).toThrow(
      expect.objectContaining({
        code: 'FORMAT.TOO_NEW',
        message: 'sealed value: events format version 2 is newer than this build reads (1); run a newer ELMA',
      }),
    );
  });

  it('fails to open with another AAD or another key', () => {
    const k = key();
    const sealed = sealJson(k, { secret: 'x' }, 'memory-t1-m1');

    expect(() => openJson(k, sealed, 'memory-t1-m2')).toThrow(expect.objectContaining({ code: 'CRYPTO.INTEGRITY_CHECK_FAILED' }));
    expect(() => openJson(key(), sealed, 'memory-t1-m1')).toThrow(expect.objectContaining({ code: 'CRYPTO.INTEGRITY_CHECK_FAILED' }));
  });

  it('rejects keys that are not 32 bytes', () => {
    expect(() => sealJson(new Uint8Array(16), 'x', 'aad')).toThrow(RangeError);
  });
});

describe('tenant keys', () => {
  it('are deterministic for the same master, salt and tenant, and differ otherwise', () => {
    const master = key();
    const salt = key();

    const k = deriveTenantKey(master, salt, 't1');

    expect(k).toHaveLength(32);
    expect(deriveTenantKey(master, salt, 't1')).toEqual(k);
    expect(deriveTenantKey(master, salt, 't2')).not.toEqual(k);
    expect(deriveTenantKey(master, key(), 't1')).not.toEqual(k);
    expect(deriveTenantKey(key(), salt, 't1')).not.toEqual(k);
  });
});

describe('wrapped data keys', () => {
  it('unwrap to the original key for the same tenant and record', () => {
    const tenantKey = key();
    const dataKey = key();

    const wrapped = wrapKey(tenantKey, dataKey, { tenant: 't1', recordId: 'm1' });

    expect(wrapped).toHaveLength(60);
    expect(Buffer.from(wrapped).includes(Buffer.from(dataKey))).toBe(false);
    expect(unwrapKey(tenantKey, wrapped, { tenant: 't1', recordId: 'm1' })).toEqual(dataKey);
  });

  it('do not unwrap for another record, another tenant, another tenant key, or when tampered', () => {
    const tenantKey = key();
    const wrapped = wrapKey(tenantKey, key(), { tenant: 't1', recordId: 'm1' });
    const tampered = new Uint8Array(wrapped);
    tampered[59] ^= 0x01;
    const fails = { code: 'CRYPTO.INTEGRITY_CHECK_FAILED' };

    expect(() => unwrapKey(tenantKey, wrapped, { tenant: 't1', recordId: 'm2' })).toThrow(expect.objectContaining(fails));
    expect(() => unwrapKey(tenantKey, wrapped, { tenant: 't1m', recordId: '1' })).toThrow(expect.objectContaining(fails));
    expect(() => unwrapKey(key(), wrapped, { tenant: 't1', recordId: 'm1' })).toThrow(expect.objectContaining(fails));
    expect(() => unwrapKey(tenantKey, tampered, { tenant: 't1', recordId: 'm1' })).toThrow(expect.objectContaining(fails));
  });
});
