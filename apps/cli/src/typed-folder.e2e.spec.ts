import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificate } from '@elma/domain/testing';
import { CertificateSigner } from '@elma/infra/certificate/signing';
import { loadConfig } from '@elma/infra/config';
import { SqliteKeyVault } from '@elma/infra/key-vault/sqlite';
import { elmaArgs, runProcess } from '../../../tests/support/elma-process';
import { embeddedStartEnv, spawnElmaStart, type StartedElma } from './embedded-env';

/**
 * Where a command typed by a person reads and writes, with real processes run the way people run them:
 * `npx elma` in a folder of the project, `npm --prefix CLONE run elma --` typed outside it, and the token
 * command `elma start` prints, pasted into another shell. Relative paths are the typed folder's, the data
 * folder follows one rule for every command, and a folder no ELMA has started is refused, untouched.
 */
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const bin = (name: 'npx' | 'npm') => join(dirname(process.execPath), name);

/** The environment of a person's shell: none of what the npm running these tests set, no ELMA of theirs. */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(name) || name === 'INIT_CWD' || /^ELMA_(DATA_DIR|PORT|URL|TOKEN|JWT_SECRET|MASTER_KEY)$/.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

const run = (command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) => runProcess(command, args, { cwd, env });

/**
 * A data folder as `elma start` leaves it (its secrets, its key vault), and beside it a certificate signed with
 * its key: what a person verifies after `elma erasure certificate … --out cert.json`.
 */
async function startedFolder(parent: string, name = 'data'): Promise<string> {
  const dataDir = join(parent, name);
  const config = loadConfig({ ELMA_DATA_DIR: dataDir });
  const vault = new SqliteKeyVault({ path: join(dataDir, 'keys.db'), masterKey: config.masterKey });
  try {
    const signer = new CertificateSigner({ keyring: () => vault.signingKeyring() });
    const certificate = signer.sign(makeCertificate({ keyId: signer.keyId, records: 3, contentFingerprint: 'cd'.repeat(32) }));
    writeFileSync(join(parent, 'cert.json'), JSON.stringify(certificate));
  } finally {
    await vault.close();
  }
  return dataDir;
}

const secretOf = (dataDir: string) => Buffer.from(readFileSync(join(dataDir, 'jwt.secret'), 'utf8').trim(), 'hex');

describe('relative paths are those of the folder the command is typed in', { timeout: 120_000 }, () => {
  // Inside the project (npx finds the bin by walking up), in the folder for test artefacts, which git ignores.
  const typed = (() => {
    mkdirSync(join(repo, 'artifacts'), { recursive: true });
    return mkdtempSync(join(repo, 'artifacts', 'elma-typed-'));
  })();
  const outside = mkdtempSync(join(tmpdir(), 'elma-typed-outside-'));
  afterAll(() => {
    rmSync(typed, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('npx elma in a subfolder: a relative ELMA_DATA_DIR, --out and the certificate file are that folder’s', async () => {
    const dataDir = await startedFolder(typed);
    const env = shellEnv({ ELMA_DATA_DIR: 'data' });

    const exported = await run(bin('npx'), ['elma', 'keys', 'export', '--out', 'keys.json'], typed, env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(existsSync(join(typed, 'keys.json'))).toBe(true);
    expect(existsSync(join(repo, 'keys.json'))).toBe(false);

    const verified = await run(bin('npx'), ['elma', 'verify-certificate', 'cert.json', '--jwks', 'keys.json'], typed, env);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^certificate OK: request \S+, tenant acme, 3 records/);

    const minted = await run(bin('npx'), ['elma', 'token', '--tenant', 'acme'], typed, env);
    expect(minted.code, minted.stderr).toBe(0);
    await expect(jwtVerify(minted.stdout.trim(), secretOf(dataDir))).resolves.toBeDefined();
  });

  it('npm --prefix CLONE run elma -- typed outside the clone: the paths are where it was typed, not the clone', async () => {
    await startedFolder(outside);
    const env = shellEnv({ ELMA_DATA_DIR: 'data' });
    const elma = (...args: string[]) => run(bin('npm'), ['--prefix', repo, 'run', '-s', 'elma', '--', ...args], outside, env);

    const exported = await elma('keys', 'export', '--out', 'keys.json');
    expect(exported.code, exported.stderr).toBe(0);
    expect(existsSync(join(outside, 'keys.json'))).toBe(true);

    const verified = await elma('verify-certificate', 'cert.json', '--jwks', 'keys.json');
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^certificate OK: request \S+, tenant acme, 3 records/);
  });

  it('without ELMA_DATA_DIR, the data folder is the project’s .elma, wherever in the project the command is typed', async () => {
    const projectData = join(repo, '.elma');
    const started = existsSync(join(projectData, 'jwt.secret'));
    const typedData = join(repo, 'docs', '.elma');
    const listing = () => (existsSync(typedData) ? readdirSync(typedData).sort() : null);
    const before = listing();
    const minted = await run(bin('npx'), ['elma', 'token'], join(repo, 'docs'), shellEnv());
    // Not the typed folder's .elma (nor anything in it, were one left there).
    expect(listing()).toEqual(before);
    if (started) {
      // This clone has run `npm start`: the token is signed with that folder's secret.
      expect(minted.code, minted.stderr).toBe(0);
      await expect(jwtVerify(minted.stdout.trim(), secretOf(projectData))).resolves.toBeDefined();
    } else {
      // It has not: the command says which folder it looked in, and creates nothing there.
      expect(minted.code).not.toBe(0);
      expect(minted.stderr).toContain(`no ELMA has started on the data folder ${projectData} `);
      expect(existsSync(join(projectData, 'jwt.secret'))).toBe(false);
    }
  });
});

describe('a data folder no ELMA has started', { timeout: 120_000 }, () => {
  const parent = mkdtempSync(join(tmpdir(), 'elma-not-started-'));
  afterAll(() => rmSync(parent, { recursive: true, force: true }));

  it.each(['token', 'token revoke --tenant acme --jti j-1', 'keys export', 'keys status', 'keys rotate --signing', 'erasure ledger'])(
    '`elma %s` refuses it, says which folder it looked in, and creates nothing there',
    async (command) => {
      const args = command.split(' ');
      const empty = mkdtempSync(join(parent, 'empty-'));
      const missing = join(parent, `missing-${args.join('-')}`);
      for (const dataDir of [empty, missing]) {
        const refused = await run(process.execPath, elmaArgs(...args), repo, shellEnv({ ELMA_DATA_DIR: dataDir }));
        expect(refused.code, refused.stdout).not.toBe(0);
        expect(refused.stderr).toContain(`no ELMA has started on the data folder ${dataDir} `);
        expect(refused.stderr).not.toMatch(/^\s+at /m);
        expect(refused.stdout).toBe('');
      }
      expect(readdirSync(empty)).toEqual([]);
      expect(existsSync(missing)).toBe(false);
    },
  );
});

describe('the token command elma start prints', { timeout: 240_000 }, () => {
  const parent = mkdtempSync(join(tmpdir(), 'elma-banner-'));
  const dataDir = join(parent, 'instance');
  let elma: StartedElma;
  let api = '';
  let tokenLine = '';

  beforeAll(async () => {
    const { env, port } = await embeddedStartEnv(dataDir);
    elma = await spawnElmaStart(env, { readyTimeoutMs: 150_000 });
    api = `http://127.0.0.1:${port}`;
    tokenLine = /^ {2}Token {6}(.+)$/m.exec(elma.output())?.[1] ?? '';
  }, 180_000);

  afterAll(async () => {
    await elma?.stop();
    rmSync(parent, { recursive: true, force: true });
  });

  const recall = (token: string) =>
    fetch(`${api}/v1/recall`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'anything', purpose: 'support' }),
    });

  it('names the data folder (absolute) and the port, which are not the defaults', () => {
    expect(tokenLine).toBe(`ELMA_DATA_DIR=${dataDir} ELMA_PORT=${new URL(api).port} npx elma token --tenant acme --purposes support`);
  });

  it('works as printed, pasted into another shell in a subfolder of the project', async () => {
    const minted = await run('/bin/sh', ['-c', tokenLine], join(repo, 'docs'), shellEnv());
    expect(minted.code, minted.stderr).toBe(0);
    expect((await recall(minted.stdout.trim())).status).toBe(200);
  });

  it('a token minted for another data folder is refused as not signed by this ELMA’s key, and nothing secret is said', async () => {
    const other = join(parent, 'other');
    loadConfig({ ELMA_DATA_DIR: other });
    const minted = await run(process.execPath, elmaArgs('token', '--tenant', 'acme'), repo, shellEnv({ ELMA_DATA_DIR: other }));
    expect(minted.code, minted.stderr).toBe(0);

    const response = await recall(minted.stdout.trim());
    const text = await response.text();
    expect(response.status).toBe(401);
    expect(JSON.parse(text)).toMatchObject({
      code: 'AUTH.TOKEN_INVALID',
      detail: "the token is not signed by this ELMA's key (minted for another data folder?)",
    });
    for (const secret of [secretOf(dataDir), secretOf(other)]) {
      expect(text).not.toContain(secret.toString('hex'));
      expect(text).not.toContain(secret.toString('base64url'));
    }
    expect(text).not.toContain(other);
  });
});
