import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignedCertificate } from '@elma/domain';
import { makeCertificate } from '@elma/domain/testing';
import { CertificateSigner, renderCertificatePdf } from '@elma/infra';
import { CONSOLE_CSP } from './console/console';
import { callApi, startTestApp, type Json, type TestApp } from './testing';

let t: TestApp;
let token: string;

const FINGERPRINT = `0123456789abcdef${'0'.repeat(48)}`;
const signedBy = (signer: CertificateSigner) =>
  signer.sign(makeCertificate({ keyId: signer.keyId, records: 2, contentFingerprint: FINGERPRINT }));

/** Uploads a certificate file's bytes as the console does. */
async function upload(bytes: Buffer | string, contentType = 'application/octet-stream', bearer: string | null = token) {
  const response = await fetch(`${t.url}/v1/certificates/verify`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: typeof bytes === 'string' ? bytes : new Uint8Array(bytes),
  });
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: (await response.json()) as Json };
}

beforeAll(async () => {
  t = await startTestApp();
  token = await t.token({ sub: 'comp-1', roles: ['compliance'], purposes: [], clearance: 'internal' });
});
afterAll(async () => t?.close());

describe('POST /v1/certificates/verify', () => {
  it('a certificate this ELMA signed is valid, and the answer says what it certifies', async () => {
    const signed = signedBy(t.elma.signer);
    const response = await upload(Buffer.from(JSON.stringify(signed, null, 2)));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      valid: true,
      format: 'json',
      reason: null,
      signedBy: t.elma.signer.keyId,
      certifies: {
        kind: 'elma.erasure-certificate',
        requestId: signed.certificate.requestId,
        tenant: signed.certificate.tenant,
        issuedAt: signed.certificate.issuedAt,
        records: 2,
        requestedBy: signed.certificate.request.requestedBy,
        approvedBy: signed.certificate.request.approvedBy,
      },
    });
  });

  it('names the staff as the certificate signs them: display name beside the id, in Chinese as in English', async () => {
    const signed = t.elma.signer.sign(
      makeCertificate({
        keyId: t.elma.signer.keyId,
        requestedBy: 'comp-1',
        requestedByName: '李娜',
        approvedBy: 'dpo-2',
        approvedByName: 'Alex Morgan',
      }),
    );
    const response = await upload(Buffer.from(JSON.stringify(signed)));
    expect(response.body.certifies).toMatchObject({
      requestedBy: 'comp-1',
      requestedByName: '李娜',
      approvedBy: 'dpo-2',
      approvedByName: 'Alex Morgan',
    });
  });

  it('reads the same document sent as application/json, and a file that starts with a byte-order mark', async () => {
    const text = JSON.stringify(signedBy(t.elma.signer));
    expect((await upload(text, 'application/json')).body.valid).toBe(true);
    expect((await upload(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]))).body.valid).toBe(true);
  });

  it('a tampered certificate is not valid, says why, and repeats none of its claims', async () => {
    const signed = signedBy(t.elma.signer);
    signed.certificate.closure.size = 1;
    const response = await upload(Buffer.from(JSON.stringify(signed)));
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ valid: false, format: 'json', signedBy: null, certifies: null });
    expect(response.body.reason).toMatch(/signature/);
  });

  it('a certificate signed by another issuer is not valid here', async () => {
    const other = new CertificateSigner({ masterKey: new Uint8Array(32).fill(9) });
    const response = await upload(Buffer.from(JSON.stringify(signedBy(other))));
    expect(response.body.valid).toBe(false);
    expect(response.body.reason).toContain(other.keyId);
  });

  it('a JSON document that is no certificate is not valid (its schema does not hold)', async () => {
    const response = await upload(Buffer.from('{"certificate":{"type":"elma.erasure-certificate"}}'));
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ valid: false, reason: expect.stringContaining('malformed certificate') });
  });

  it('checks a PDF certificate by its attached signed JSON and its page (forged pages: infra/src/certificate/pdf.unit.spec.ts)', async () => {
    const signed = signedBy(t.elma.signer);
    const pdf = await renderCertificatePdf(SignedCertificate.parse(signed));
    const valid = await upload(pdf, 'application/pdf');
    expect(valid).toMatchObject({ status: 200, body: { valid: true, format: 'pdf', signedBy: signed.signature.kid } });
    expect(valid.body.certifies).toMatchObject({ kind: 'elma.erasure-certificate', requestId: signed.certificate.requestId });
    // Signed by another ELMA: read, but not valid here.
    const foreign = await upload(
      await renderCertificatePdf(SignedCertificate.parse(signedBy(new CertificateSigner({ masterKey: new Uint8Array(32).fill(9) })))),
      'application/pdf',
    );
    expect(foreign).toMatchObject({ status: 200, body: { valid: false, format: 'pdf', certifies: null } });
  });

  it('refuses a PDF without a certificate, a file that is neither JSON nor PDF, and a newer format, each with its stable code', async () => {
    const pdf = await upload(Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj <<>> endobj\n'), 'application/pdf');
    expect(pdf).toMatchObject({ status: 422, contentType: expect.stringContaining('application/problem+json') });
    expect(pdf.body.code).toBe('CERTIFICATE.UNREADABLE');
    const garbage = await upload(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]));
    expect(garbage).toMatchObject({ status: 422, body: { code: 'CERTIFICATE.UNREADABLE' } });
    const signed = signedBy(t.elma.signer);
    const newer = await upload(Buffer.from(JSON.stringify({ ...signed, certificate: { ...signed.certificate, version: 99 } })));
    expect(newer).toMatchObject({ status: 422, body: { code: 'CERTIFICATE.FORMAT_TOO_NEW' } });
    expect(newer.body.detail).toContain('99');
  });

  it('needs a token, and an empty or oversized body is a problem, not a 500', async () => {
    const anonymous = await upload(Buffer.from('{}'), 'application/octet-stream', null);
    expect(anonymous).toMatchObject({ status: 401, body: { code: 'AUTH.UNAUTHENTICATED' } });
    expect((await upload(Buffer.alloc(0))).status).toBe(422);
    expect((await upload(Buffer.alloc(1024 * 1024 + 1, 0x20))).body.code).toBe('REQUEST.PAYLOAD_TOO_LARGE');
  });

  it('every other route still refuses a binary body with 415', async () => {
    for (const type of ['application/octet-stream', 'application/pdf']) {
      const response = await fetch(`${t.url}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': type, authorization: `Bearer ${token}` },
        body: '{"events":[]}',
      });
      expect(response.status).toBe(415);
      expect(((await response.json()) as { code: string }).code).toBe('REQUEST.UNSUPPORTED_MEDIA_TYPE');
    }
  });
});

describe('GET /v1/session', () => {
  it('returns the caller as the server verified the token, and a wrong token is a 401 problem', async () => {
    const me = await callApi(t.url, token, 'GET', '/v1/session');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ tenant: 'acme', sub: 'comp-1', roles: ['compliance'], purposes: [], clearance: 'internal' });
    const wrong = await callApi(t.url, `${token.slice(0, -4)}AAAA`, 'GET', '/v1/session');
    expect(wrong.status).toBe(401);
    expect(wrong.contentType).toContain('application/problem+json');
    expect(wrong.body.code).toBe('AUTH.TOKEN_INVALID');
  });
});

describe('the console at /console', () => {
  it('serves its page, style sheet and script under a policy that allows no inline script and nothing from elsewhere', async () => {
    const redirect = await fetch(`${t.url}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/console/');
    const page = await fetch(`${t.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(CONSOLE_CSP);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toMatch(/https?:/);
    const html = await page.text();
    // Every script is a file of this origin; no inline handler or inline script.
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/src="\/console\//);
      expect(body.trim()).toBe('');
    }
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/https?:\/\//);
    for (const [name, type] of [
      ['console.js', 'text/javascript'],
      ['console.css', 'text/css'],
    ]) {
      const asset = await fetch(`${t.url}/console/${name}`);
      expect(asset.status, name).toBe(200);
      expect(asset.headers.get('content-type')).toContain(type);
      expect(asset.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(await asset.text()).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    }
    const missing = await fetch(`${t.url}/console/nothing.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
  });
});
