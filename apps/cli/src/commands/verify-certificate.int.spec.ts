import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificate } from '@elma/domain/testing';
import { CertificateSigner } from '@elma/infra';
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

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'elma-verify-certificate-'));
    certificateFile = join(dir, 'certificate.json');
    jwksFile = join(dir, 'jwks.json');
    await writeFile(certificateFile, JSON.stringify(aSignedCertificate(), null, 2));
    await writeFile(jwksFile, JSON.stringify(signer.jwks()));
    server = createServer((request, response) => {
      if (request.url === '/.well-known/elma-keys') {
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
    await writeFile(newerFile, JSON.stringify({ ...signed, certificate: { ...signed.certificate, version: 2 } }));
    const out = capture();

    const code = await verifyCertificateCommand([newerFile, '--jwks', jwksFile], out.io);

    expect(code).toBe(2);
    expect(out.stderr()).toBe('certificate format version 2 is newer than this elma reads (1): verify it with a newer elma\n');
  });

  it('keys fetched from the issuing service over HTTP verify the certificate', async () => {
    const out = capture();

    const code = await verifyCertificateCommand([certificateFile, '--jwks', `${baseUrl}/.well-known/elma-keys`], out.io);

    expect(code).toBe(0);
  });

  it('without --jwks the keys come from ELMA_URL', async () => {
    const previous = process.env.ELMA_URL;
    process.env.ELMA_URL = baseUrl;
    try {
      expect(await verifyCertificateCommand([certificateFile], capture().io)).toBe(0);
    } finally {
      if (previous === undefined) delete process.env.ELMA_URL;
      else process.env.ELMA_URL = previous;
    }
  });

  it('without --jwks or ELMA_URL the keys come from the local API on ELMA_PORT', async () => {
    const saved = { url: process.env.ELMA_URL, port: process.env.ELMA_PORT };
    delete process.env.ELMA_URL;
    process.env.ELMA_PORT = new URL(baseUrl).port;
    try {
      expect(await verifyCertificateCommand([certificateFile], capture().io)).toBe(0);
    } finally {
      for (const [name, value] of [
        ['ELMA_URL', saved.url],
        ['ELMA_PORT', saved.port],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
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
