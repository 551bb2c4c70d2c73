import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { TENANT_ID_RULE } from '@elma/domain';
import { loadConfig } from '@elma/infra/config';
import { elmaArgs } from '../../../../tests/support/elma-process';

const dataDir = mkdtempSync(join(tmpdir(), 'elma-token-'));
// The secrets `elma start` creates on a new folder: `elma token` signs only for a folder an ELMA has started.
loadConfig({ ELMA_DATA_DIR: dataDir });
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** `elma token` as a user runs it, on a folder of its own. */
function token(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, elmaArgs('token', ...args), {
    env: { ...process.env, ELMA_DATA_DIR: dataDir, ...env },
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr };
}

describe('elma token', () => {
  it('refuses an unknown role and names the built-in ones, printing no token', () => {
    const result = token(['--roles', 'agent,superuser']);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /unknown role superuser; built-in roles: agent, service, admin, reviewer, auditor, compliance, dpo, legal/,
    );
  });

  it('refuses a tenant that breaks the name rule with one sentence naming the rule, printing no token', () => {
    for (const tenant of ['lc-X', '_platform']) {
      const result = token(['--tenant', tenant]);
      expect(result.status, tenant).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`elma token: --tenant: ${TENANT_ID_RULE}\n`);
    }
  });

  it('mints built-in roles, plus roles a tenant policy defines when asked with --policy-roles, and a display name, for 8 h by default', () => {
    const result = token(['--roles', 'dpo,agent', '--policy-roles', 'night-shift', '--name', ' 王伟 ']);
    expect(result.status, result.stderr).toBe(0);
    const claims = decodeJwt(result.stdout);
    expect(claims.roles).toEqual(['dpo', 'agent', 'night-shift']);
    // The display name certificates show for staff (the standard `name` claim).
    expect(claims.name).toBe('王伟');
    expect(claims.exp! - claims.iat!).toBe(8 * 3600);
    expect([claims.iss, claims.aud]).toEqual(['elma', 'elma-api']);
  });

  it('takes --ttl as a duration bounded by ELMA_TOKEN_MAX_TTL, and the configured issuer and audience', () => {
    const short = decodeJwt(token(['--ttl', '15m']).stdout);
    expect(short.exp! - short.iat!).toBe(900);
    const tooLong = token(['--ttl', '25h']);
    expect(tooLong.status).toBe(2);
    expect(tooLong.stderr).toMatch(/--ttl is at most 86400 s \(ELMA_TOKEN_MAX_TTL\)/);
    expect(token(['--ttl', 'forever']).status).toBe(2);
    const capped = token([], { ELMA_TOKEN_MAX_TTL: '1h', ELMA_JWT_ISSUER: 'me', ELMA_JWT_AUDIENCE: 'you' });
    const claims = decodeJwt(capped.stdout);
    expect(claims.exp! - claims.iat!).toBe(3600);
    expect([claims.iss, claims.aud]).toEqual(['me', 'you']);
  });

  it('mints nothing when the API takes its tokens from an identity provider', () => {
    const result = token([], { ELMA_JWKS_URL: 'https://id.example.test/jwks.json' });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/ELMA_JWKS_URL/);
  });
});
