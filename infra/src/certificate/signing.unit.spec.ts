import { describe, expect, it } from 'vitest';
import type { ErasureCertificate } from '@elma/domain';
import { makeCertificate } from '@elma/domain/testing';
import { CertificateSigner, verifySignedCertificate } from './signing';

const masterKey = new Uint8Array(32).fill(7);
const otherMasterKey = new Uint8Array(32).fill(8);

function aCertificate(keyId: string, records = 3): ErasureCertificate {
  return makeCertificate({ keyId, records });
}

describe('certificate signing', () => {
  const signer = new CertificateSigner({ masterKey });

  it('a signed certificate verifies against the published key set', () => {
    const certificate = aCertificate(signer.keyId);

    const result = verifySignedCertificate(signer.sign(certificate), signer.jwks());

    expect(result).toEqual({ ok: true, certificate, kid: signer.keyId });
  });

  it('the signed certificate survives a JSON round trip', () => {
    const wire = JSON.parse(JSON.stringify(signer.sign(aCertificate(signer.keyId))));

    expect(verifySignedCertificate(wire, JSON.parse(JSON.stringify(signer.jwks()))).ok).toBe(true);
  });

  it('signing is deterministic', () => {
    const certificate = aCertificate(signer.keyId);

    expect(JSON.stringify(signer.sign(certificate))).toBe(JSON.stringify(signer.sign(structuredClone(certificate))));
    expect(new CertificateSigner({ masterKey }).sign(certificate)).toEqual(signer.sign(certificate));
  });

  it('publishes one Ed25519 signing key named by its key id', () => {
    const { keys } = signer.jwks();

    expect(keys).toEqual([
      { kty: 'OKP', crv: 'Ed25519', x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), kid: signer.keyId, use: 'sig', alg: 'EdDSA' },
    ]);
    expect(signer.keyId).toMatch(/^elma-[0-9a-f]{16}$/);
  });

  it('the same master key gives the same key id, another master key a different one', () => {
    const other = new CertificateSigner({ masterKey: otherMasterKey });

    expect(new CertificateSigner({ masterKey: Uint8Array.from(masterKey) }).keyId).toBe(signer.keyId);
    expect(other.keyId).not.toBe(signer.keyId);
    expect(other.jwks().keys[0].x).not.toBe(signer.jwks().keys[0].x);
  });

  it("a certificate signed under another master key is rejected with this deployment's keys", () => {
    const other = new CertificateSigner({ masterKey: otherMasterKey });

    const result = verifySignedCertificate(other.sign(aCertificate(other.keyId)), signer.jwks());

    expect(result).toEqual({ ok: false, reason: `unknown signing key ${other.keyId}` });
  });

  it('refuses to sign a certificate that names another key', () => {
    expect(() => signer.sign(aCertificate('elma-0000000000000000'))).toThrow(Error);
  });

  it('flipping any single byte of the signed JSON is detected', () => {
    const serialized = Buffer.from(JSON.stringify(signer.sign(aCertificate(signer.keyId))), 'utf8');
    const jwks = signer.jwks();
    let tried = 0;
    const accepted: number[] = [];

    for (let position = 0; position < serialized.length; position += 37) {
      const tampered = Buffer.from(serialized);
      tampered[position] ^= 0x01;
      tried++;
      let parsed: unknown;
      try {
        parsed = JSON.parse(tampered.toString('utf8'));
      } catch {
        continue; // unreadable counts as rejected
      }
      if (verifySignedCertificate(parsed, jwks).ok) accepted.push(position);
    }

    expect(tried).toBeGreaterThan(50);
    expect(accepted).toEqual([]);
  });

  it('a changed value fails verification', () => {
    const signed = signer.sign(aCertificate(signer.keyId));
    const tampered = structuredClone(signed);
    tampered.certificate.closure.size += 1;

    expect(verifySignedCertificate(tampered, signer.jwks())).toEqual({ ok: false, reason: 'signature does not match' });
  });

  it("a signature whose key id differs from the certificate's is rejected", () => {
    const other = new CertificateSigner({ masterKey: otherMasterKey });
    const signed = signer.sign(aCertificate(signer.keyId));
    const relabelled = { ...signed, signature: { ...signed.signature, kid: other.keyId } };
    const bothKeys = { keys: [...signer.jwks().keys, ...other.jwks().keys] };

    const result = verifySignedCertificate(relabelled, bothKeys);

    expect(result.ok).toBe(false);
    expect(result.ok === false && result.reason).toContain(other.keyId);
  });

  it('a signature from the other key cannot be passed off under the certificate key id', () => {
    const other = new CertificateSigner({ masterKey: otherMasterKey });
    const certificate = aCertificate(signer.keyId);
    const forged = { certificate, signature: { ...other.sign(aCertificate(other.keyId)).signature, kid: signer.keyId } };

    expect(verifySignedCertificate(forged, signer.jwks())).toEqual({ ok: false, reason: 'signature does not match' });
  });

  it('a re-encoded signature (same bytes, other base64url spelling) is rejected', () => {
    const signed = signer.sign(aCertificate(signer.keyId));
    const value = signed.signature.value;
    // The last of 86 characters carries 2 signature bits and 4 spare ones.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(value[value.length - 1]);
    const respelled = `${value.slice(0, -1)}${alphabet[last ^ 0b0001]}`;
    expect(Buffer.from(respelled, 'base64url')).toEqual(Buffer.from(value, 'base64url'));

    const result = verifySignedCertificate({ ...signed, signature: { ...signed.signature, value: respelled } }, signer.jwks());

    expect(result).toEqual({ ok: false, reason: 'signature does not match' });
  });

  it('malformed input is a failed verification, not an exception, and names the field only', () => {
    const signed = signer.sign(aCertificate(signer.keyId));
    const jwks = signer.jwks();
    const secret = 'alice@private.example';
    const withSecret = structuredClone(signed) as unknown as { certificate: { closure: { size: unknown } } };
    withSecret.certificate.closure.size = secret;

    const cases: [unknown, unknown][] = [
      [undefined, jwks],
      [null, jwks],
      ['not a certificate', jwks],
      [{}, jwks],
      [{ certificate: signed.certificate }, jwks],
      [withSecret, jwks],
      [{ ...signed, extra: secret }, jwks],
      [signed, undefined],
      [signed, { keys: 'none' }],
      [signed, { keys: [{ kid: signer.keyId, kty: 'RSA', n: 'x', e: 'AQAB' }] }],
      [signed, { keys: [{ kid: signer.keyId, kty: 'OKP', crv: 'Ed25519', x: 'short' }] }],
    ];

    for (const [input, keys] of cases) {
      const result = verifySignedCertificate(input, keys);
      expect(result.ok).toBe(false);
      expect(result.ok === false && result.reason).not.toContain(secret);
    }
    expect(verifySignedCertificate(withSecret, jwks)).toEqual({
      ok: false,
      reason: 'malformed certificate: certificate.closure.size',
    });
  });
});
