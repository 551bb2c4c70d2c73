import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { checkCertificateFile } from '@elma/infra';
import { apiUrlOf } from '../api-client';

const USAGE = 'usage: elma verify-certificate <file> [--jwks <url-or-file>] [--file <export.json|export.pdf>]...\n';
const FETCH_TIMEOUT_MS = 10_000;

interface Output {
  write(text: string): unknown;
}

/**
 * Checks a signed erasure certificate, subject-access manifest or tenant
 * off-boarding certificate (the JSON document, told apart by its `type`)
 * against the issuer's published keys; with `--file`, also that each given
 * export file is the one a manifest names (sha256). Exit codes: 0 valid,
 * 1 invalid, 2 the check could not be made (usage, unreadable file, keys
 * unreachable, a format newer than this build reads).
 */
export async function verifyCertificateCommand(
  argv: string[],
  io: { stdout: Output; stderr: Output } = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let file: string;
  let jwksSource: string;
  let exportFiles: string[];
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { jwks: { type: 'string' }, file: { type: 'string', multiple: true } },
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new Error('expected exactly one certificate file');
    file = positionals[0];
    exportFiles = values.file ?? [];
    jwksSource = values.jwks ?? `${defaultServiceUrl(process.env)}/.well-known/elma-keys`;
  } catch (error) {
    io.stderr.write(`${messageOf(error)}\n${USAGE}`);
    return 2;
  }

  let certificate: Buffer;
  try {
    certificate = await readFile(file);
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

  const check = checkCertificateFile(certificate, jwks);
  switch (check.outcome) {
    case 'unreadable':
      io.stderr.write(`cannot read certificate ${file}: not valid JSON\n`);
      return 2;
    case 'pdf_unsupported':
      io.stderr.write(`cannot read certificate ${file}: this elma verifies the signed JSON certificate only, not a PDF\n`);
      return 2;
    case 'too_new':
      io.stderr.write(
        `certificate format version ${check.version} is newer than this elma reads (${check.supported}): verify it with a newer elma\n`,
      );
      return 2;
  }
  const result = check.verification;
  if (!result.ok) {
    io.stderr.write(`certificate INVALID: ${result.reason}\n`);
    return 1;
  }
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

/** The issuing service when no --jwks is given: the API as every command finds it (`apiUrlOf`). */
function defaultServiceUrl(env: NodeJS.ProcessEnv): string {
  return apiUrlOf({}, env);
}
