import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadVerifierConfig } from '@elma/infra/config';
import { verifyCertificateFile, type CertificateCheck } from '@elma/infra/certificate/verify';
import { apiUrlOf } from '../api-client';

const USAGE = `usage: elma verify-certificate <certificate.json|certificate.pdf> [--jwks <file-or-url> | --online] [--file <export.json|export.pdf>]...
Offline by default: the signing keys come from --jwks FILE (export them once with \`elma keys export --out FILE\`) or
ELMA_CERTIFICATE_KEYS. The issuing service is asked only with --jwks URL or --online (ELMA_URL, else ELMA_PORT).
`;
const FETCH_TIMEOUT_MS = 10_000;

interface Output {
  write(text: string): unknown;
}

/**
 * Checks a signed erasure certificate (JSON, or the PDF with the signed JSON attached, whose page must show that
 * certificate), subject-access manifest or tenant off-boarding certificate against the issuer's public keys;
 * with `--file`, also that each given export file is the one a manifest names (sha256). Offline unless asked:
 * the keys come from a file. Exit codes: 0 valid, 1 invalid, 2 the check could not be made (usage, unreadable
 * file, no keys, keys unreachable, a format newer than this build reads).
 */
export async function verifyCertificateCommand(
  argv: string[],
  io: { stdout: Output; stderr: Output; env?: NodeJS.ProcessEnv } = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let file: string;
  let jwksSource: string;
  let exportFiles: string[];
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { jwks: { type: 'string' }, online: { type: 'boolean', default: false }, file: { type: 'string', multiple: true } },
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new Error('expected exactly one certificate file');
    if (values.jwks !== undefined && values.online) throw new Error('--jwks and --online exclude each other');
    file = positionals[0];
    exportFiles = values.file ?? [];
    const env = io.env ?? process.env;
    const source = values.jwks ?? (values.online ? `${apiUrlOf({}, env)}/.well-known/elma-keys` : loadVerifierConfig(env).jwksFile);
    if (source === undefined) {
      throw new Error(
        'no signing keys: pass --jwks FILE (export them once with `elma keys export --out FILE`), set ELMA_CERTIFICATE_KEYS, ' +
          'or ask the issuing service with --online',
      );
    }
    jwksSource = source;
  } catch (error) {
    io.stderr.write(`${messageOf(error)}\n${USAGE}`);
    return 2;
  }

  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    io.stderr.write(`cannot read certificate ${file}: ${messageOf(error)}\n`);
    return 2;
  }

  let jwks: unknown;
  try {
    jwks = /^https?:\/\//i.test(jwksSource) ? await fetchJson(jwksSource) : await readJsonFile(jwksSource);
  } catch (error) {
    io.stderr.write(`cannot load signing keys from ${jwksSource}: ${messageOf(error)}\n`);
    return 2;
  }

  const result = await verifyCertificateFile(bytes, jwks);
  switch (result.status) {
    case 'unreadable':
      io.stderr.write(result.format === 'unknown' ? `cannot read certificate ${file}: not valid JSON or PDF\n` : `${result.reason}\n`);
      return 2;
    case 'invalid':
      io.stderr.write(`certificate INVALID: ${result.reason}\n`);
      return 1;
    case 'valid':
      return reportValid(result, exportFiles, io);
  }
}

async function reportValid(
  result: Extract<CertificateCheck, { status: 'valid' }>,
  exportFiles: string[],
  io: { stdout: Output; stderr: Output },
): Promise<number> {
  if (result.type !== 'elma.subject-access-manifest' && exportFiles.length > 0) {
    io.stderr.write('--file applies to subject-access manifests only\n');
    return 2;
  }
  if (result.type === 'elma.tenant-offboarding') {
    const c = result.document;
    io.stdout.write(
      `certificate OK: tenant off-boarding ${c.requestId}, tenant ${c.tenant}, ${c.destroyed.records} records, ` +
        `${c.destroyed.streamsDeleted} streams, export ${c.export ? `sha256 ${c.export.sha256}` : 'none'}, signed by ${result.kid}\n`,
    );
    return 0;
  }
  if (result.type === 'elma.erasure-certificate') {
    const c = result.document;
    io.stdout.write(`certificate OK: request ${c.requestId}, tenant ${c.tenant}, ${c.closure.size} records, signed by ${result.kid}\n`);
    if (result.visible?.status === 'matches') io.stdout.write('PDF OK: the page shows the attached signed certificate\n');
    if (result.visible?.status === 'not_compared') {
      io.stdout.write(
        `PDF page not compared: laid out by ${result.visible.layout ?? 'an unknown layout'}, which this elma does not render; ` +
          'the attached signed certificate is what counts\n',
      );
    }
    return 0;
  }
  const m = result.document;
  for (const path of exportFiles) {
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (error) {
      io.stderr.write(`cannot read export file ${path}: ${messageOf(error)}\n`);
      return 2;
    }
    const digest = createHash('sha256').update(bytes).digest('hex');
    const named = [m.files.json, m.files.pdf].find((f) => f.sha256 === digest);
    if (!named) {
      io.stderr.write(`export file INVALID: ${path} is not a file this manifest names (sha256 ${digest})\n`);
      return 1;
    }
    io.stdout.write(`export file OK: ${path} is ${named.name} (${named.bytes} bytes)\n`);
  }
  io.stdout.write(`manifest OK: subject access ${m.requestId}, tenant ${m.tenant}, ${m.counts.records} records, signed by ${result.kid}\n`);
  return 0;
}

async function readJsonFile(path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8');
  try {
    return JSON.parse(text);
  } catch {
    throw new Error('not valid JSON');
  }
}

async function fetchJson(url: string): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  try {
    return await response.json();
  } catch {
    throw new Error('response is not valid JSON');
  }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    // fetch reports network failures as "fetch failed" with the reason in `cause`.
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    if (error.name === 'TimeoutError') return `no answer within ${FETCH_TIMEOUT_MS / 1000} s`;
    return code === 'ENOENT' ? 'no such file' : `${error.message}${cause}`;
  }
  return String(error);
}
