import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORMAT_VERSIONS } from '@elma/domain';
import { makeCertificate } from '@elma/domain/testing';
import { CertificateSigner, renderCertificatePdf } from '@elma/infra';
import { keysCommand } from './keys';
import { verifyCertificateCommand } from './verify-certificate';

const signer = new CertificateSigner({ masterKey: new Uint8Array(32).fill(7) });
const FINGERPRINT = `0123456789abcdef${'0'.repeat(48)}`;

function aSignedCertificate() {
  return signer.sign(makeCertificate({ keyId: signer.keyId, records: 1, contentFingerprint: FINGERPRINT }));
}

function capture() {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    io: { stdout: { write: (s: string) => stdout.push(s) }, stderr: { write: (s: string) => stderr.push(s) } },
    stdout: () => stdout.join(''),
    stderr: () => stderr.join(''),
  };
}

describe('elma verify-certificate', () => {
  let dir: string;
  let certificateFile: string;
  let jwksFile: string;
  let server: Server;
  let baseUrl: string;
  let keyRequests = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'elma-verify-certificate-'));
    certificateFile = join(dir, 'certificate.json');
    jwksFile = join(dir, 'jwks.json');
    await writeFile(certificateFile, JSON.stringify(aSignedCertificate(), null, 2));
    await writeFile(jwksFile, JSON.stringify(signer.jwks()));
    server = createServer((request, response) => {
      if (request.url === '/.well-known/elma-keys') {
        keyRequests++;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(signer.jwks()));
      } else {
        response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('a genuine certificate checked against a key file is OK', async () => {
    const out = capture();

    const code = await verifyCertificateCommand([certificateFile, '--jwks', jwksFile], out.io);

    expect(code).toBe(0);
    expect(out.stdout()).toBe(`certificate OK: request er-2024-0001, tenant acme, 1 records, signed by ${signer.keyId}\n`);
  });

  it('a certificate with one hex digit changed is INVALID', async () => {
    const text = await readFile(certificateFile, 'utf8');
    const tampered = text.replace(`"contentFingerprint": "${FINGERPRINT}"`, `"contentFingerprint": "1${FINGERPRINT.slice(1)}"`);
    expect(tampered).not.toBe(text);
    const tamperedFile = join(dir, 'tampered.json');
    await writeFile(tamperedFile, tampered);
    const out = capture();

    const code = await verifyCertificateCommand([tamperedFile, '--jwks', jwksFile], out.io);

    expect(code).toBe(1);
    expect(out.stderr()).toBe('certificate INVALID: signature does not match\n');
  });

  it('a certificate of a newer format is not judged: exit 2, saying which version and that a newer elma verifies it', async () => {
    const signed = aSignedCertificate();
    const newerFile = join(dir, 'newer.json');
    const newer = FORMAT_VERSIONS.certificates + 1;
    await writeFile(newerFile, JSON.stringify({ ...signed, certificate: { ...signed.certificate, version: newer } }));
    const out = capture();

    const code = await verifyCertificateCommand([newerFile, '--jwks', jwksFile], out.io);

    expect(code).toBe(2);
    expect(out.stderr()).toBe(
      `certificate format version ${newer} is newer than this elma reads (${FORMAT_VERSIONS.certificates}): verify it with a newer elma\n`,
    );
  });

  it('a certificate PDF verifies on its own: the attached signed JSON, and the page that shows it', async () => {
    const pdfFile = join(dir, 'certificate.pdf');
    await writeFile(pdfFile, await renderCertificatePdf(aSignedCertificate()));
    const out = capture();

    const code = await verifyCertificateCommand([pdfFile, '--jwks', jwksFile], out.io);

    expect(code).toBe(0);
    expect(out.stdout()).toBe(
      `certificate OK: request er-2024-0001, tenant acme, 1 records, signed by ${signer.keyId}\n` +
        'PDF OK: the page shows the attached signed certificate\n',
    );
  });

  it('a certificate PDF whose attached JSON was changed is INVALID', async () => {
    const tampered = aSignedCertificate();
    tampered.certificate.closure.size = 5;
    const pdfFile = join(dir, 'tampered.pdf');
    await writeFile(pdfFile, await renderCertificatePdf(tampered));
    const out = capture();

    expect(await verifyCertificateCommand([pdfFile, '--jwks', jwksFile], out.io)).toBe(1);
    expect(out.stderr()).toBe('certificate INVALID: signature does not match\n');
  });

  it('keys fetched from the issuing service over HTTP verify the certificate', async () => {
    const out = capture();

    const code = await verifyCertificateCommand([certificateFile, '--jwks', `${baseUrl}/.well-known/elma-keys`], out.io);

    expect(code).toBe(0);
  });

  it('offline by default: without --jwks the key file named by ELMA_CERTIFICATE_KEYS is used, and no service is asked', async () => {
    const asked = keyRequests;
    const out = capture();

    const code = await verifyCertificateCommand([certificateFile], {
      ...out.io,
      env: { ELMA_CERTIFICATE_KEYS: jwksFile, ELMA_URL: baseUrl },
    });

    expect(code).toBe(0);
    expect(keyRequests).toBe(asked);
  });

  it('with no key file and no --online, nothing is fetched: exit 2, saying how to get the keys', async () => {
    const asked = keyRequests;
    const out = capture();

    const code = await verifyCertificateCommand([certificateFile], { ...out.io, env: { ELMA_URL: baseUrl } });

    expect(code).toBe(2);
    expect(out.stderr()).toContain('no signing keys: pass --jwks FILE (export them once with `elma keys export --out FILE`)');
    expect(keyRequests).toBe(asked);
  });

  it('--online asks the issuing service at ELMA_URL, else the local API on ELMA_PORT', async () => {
    const asked = keyRequests;

    expect(await verifyCertificateCommand([certificateFile, '--online'], { ...capture().io, env: { ELMA_URL: baseUrl } })).toBe(0);
    expect(
      await verifyCertificateCommand([certificateFile, '--online'], { ...capture().io, env: { ELMA_PORT: new URL(baseUrl).port } }),
    ).toBe(0);
    expect(keyRequests).toBe(asked + 2);
    const down = capture();
    expect(await verifyCertificateCommand([certificateFile, '--online'], { ...down.io, env: { ELMA_URL: 'http://127.0.0.1:1' } })).toBe(2);
    expect(down.stderr()).toContain('cannot load signing keys from http://127.0.0.1:1/.well-known/elma-keys');
  });

  it('`elma keys export --online --out FILE` saves the keys once; the certificate then verifies offline with them', async () => {
    const exported = join(dir, 'exported-keys.json');
    const previous = process.env.ELMA_URL;
    process.env.ELMA_URL = baseUrl;
    const out = capture();
    try {
      expect(await keysCommand(['export', '--online', '--out', exported], out.io)).toBe(0);
    } finally {
      if (previous === undefined) delete process.env.ELMA_URL;
      else process.env.ELMA_URL = previous;
    }
    expect(JSON.parse(await readFile(exported, 'utf8'))).toEqual(signer.jwks());
    expect(out.stderr()).toContain(`wrote 1 signing key(s) to ${exported}`);
    const asked = keyRequests;

    expect(await verifyCertificateCommand([certificateFile, '--jwks', exported], capture().io)).toBe(0);
    expect(keyRequests).toBe(asked);
  });

  it('a missing certificate file is a usage error', async () => {
    const out = capture();

    const code = await verifyCertificateCommand([join(dir, 'missing.json'), '--jwks', jwksFile], out.io);

    expect(code).toBe(2);
    expect(out.stderr()).toContain('no such file');
  });

  it('a file that is not JSON, no file at all, or unreachable keys are usage errors', async () => {
    const notJson = join(dir, 'not-json.txt');
    await writeFile(notJson, 'certificate? what certificate');

    expect(await verifyCertificateCommand([notJson, '--jwks', jwksFile], capture().io)).toBe(2);
    expect(await verifyCertificateCommand([], capture().io)).toBe(2);
    expect(await verifyCertificateCommand([certificateFile, '--jwks', `${baseUrl}/nowhere`], capture().io)).toBe(2);
    expect(await verifyCertificateCommand([certificateFile, '--jwks', 'http://127.0.0.1:1/keys'], capture().io)).toBe(2);
  });
});
