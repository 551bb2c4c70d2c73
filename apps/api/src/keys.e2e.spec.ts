import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Principal } from '@elma/domain';
import { mintToken } from '@elma/infra';
import { makeCertificate } from '@elma/domain/testing';
import { elmaArgs } from '../../../tests/support/elma-process';
import { callApi, chatEvent, startTestApp, type TestApp } from './testing';

let t: TestApp;
const tokens: Record<string, string> = {};

async function call(token: string, method: string, path: string, body?: unknown) {
  const response = await callApi(t.url, token, method, path, body);
  return { ...response, type: response.contentType };
}

const recallTexts = async (token: string, query: string) => {
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  const response = await call(token, 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 2000 });
  expect(response.status, response.text).toBe(200);
  return (response.body.items as { text: string }[]).map((i) => i.text);
};

const mint = (claims: Partial<Principal>) => t.token({ purposes: ['support'], clearance: 'confidential', ...claims });

beforeAll(async () => {
  t = await startTestApp();
  tokens.agent = await mint({ sub: 'agent-1', roles: ['agent'] });
  tokens.agent2 = await mint({ sub: 'agent-2', roles: ['agent'] });
  tokens.admin = await mint({ sub: 'admin-1', roles: ['admin'] });
  tokens.otherAdmin = await mint({ tenant: 'globex', sub: 'admin-g', roles: ['admin'] });
});
afterAll(async () => t?.close());

describe('token revocation (deny list by jti)', () => {
  it('every minted token has its own jti', () => {
    const ids = Object.values(tokens).map((token) => decodeJwt(token).jti);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('another tenant’s admin revoking our token id denies nothing of ours; a non-admin may not revoke', async () => {
    const { jti } = decodeJwt(tokens.agent);
    const foreign = await call(tokens.otherAdmin, 'POST', '/v1/tokens/revocations', { jti });
    // Accepted for globex's own tokens: the answer says nothing of whether acme has such a token.
    expect(foreign.status, foreign.text).toBe(201);
    expect((await call(tokens.agent, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 })).status).toBe(200);

    const refused = await call(tokens.agent2, 'POST', '/v1/tokens/revocations', { jti });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('AUTH.FORBIDDEN');
    const malformed = await call(tokens.admin, 'POST', '/v1/tokens/revocations', { jti: '', extra: 1 });
    expect(malformed.status).toBe(422);
    expect(malformed.type).toMatch(/application\/problem\+json/);

    // Given the token itself: one of another tenant is refused (an entry for it would deny nothing), and works on.
    const theirs = await call(tokens.otherAdmin, 'POST', '/v1/tokens/revocations', { token: tokens.agent });
    expect([theirs.status, theirs.body.code]).toEqual([403, 'AUTH.TENANT_MISMATCH']);
    expect((await call(tokens.agent, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 })).status).toBe(200);
    for (const body of [{ token: 'not-a-jwt' }, { token: tokens.agent, exp: 1 }, { token: tokens.agent, jti: 'x' }, {}]) {
      const refused = await call(tokens.admin, 'POST', '/v1/tokens/revocations', body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body.code).toBe('REQUEST.VALIDATION_FAILED');
      expect(refused.text).not.toContain(tokens.agent);
    }
  });

  it('a revocation lasts as long as the token is accepted: an expiresAt given too early is raised, whether the token, its jti and exp or its jti alone is given', async () => {
    const skew = t.elma.config.auth.clockSkewSeconds;
    const shortLived = (sub: string) =>
      mintToken(t.elma.config.jwtSecret, Principal.parse({ tenant: 'acme', sub, roles: ['agent'], purposes: ['support'] }), {
        ttlSeconds: 30,
      });
    const [byToken, byExp, byJti] = await Promise.all(['rev-token', 'rev-exp', 'rev-jti'].map(shortLived));
    const claimsOf = (token: string) => decodeJwt(token) as { jti: string; exp: number };
    // Before every token's exp: accepted before this change, the entries then lapsed within the second.
    const early = new Date(Date.now() - 1000).toISOString();
    const revoke = (body: object) => call(tokens.admin, 'POST', '/v1/tokens/revocations', { ...body, expiresAt: early });
    const answers = [
      await revoke({ token: byToken }),
      await revoke({ jti: claimsOf(byExp).jti, exp: claimsOf(byExp).exp }),
      await revoke({ jti: claimsOf(byJti).jti }),
    ];
    const revokedIn = Math.floor(Date.now() / 1000);
    for (const answer of answers) expect(answer.status, answer.text).toBe(201);
    expect(answers[0].body.jti).toBe(claimsOf(byToken).jti);

    // Until the token is no longer accepted (exp plus the clock skew); without exp, as long as any token may live.
    const ends = answers.map((answer) => Date.parse(answer.body.expiresAt) / 1000);
    expect(ends[0]).toBe(claimsOf(byToken).exp + skew);
    expect(ends[1]).toBe(claimsOf(byExp).exp + skew);
    expect(ends[2]).toBeGreaterThanOrEqual(revokedIn + 24 * 3600);

    // Past the early expiry (the deny list counts whole seconds), every one of them is still refused.
    await new Promise((resolve) => setTimeout(resolve, (revokedIn + 1) * 1000 - Date.now() + 50));
    for (const token of [byToken, byExp, byJti]) {
      const denied = await call(token, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 });
      expect([denied.status, denied.body.code]).toEqual([401, 'AUTH.TOKEN_REVOKED']);
    }
    // Asked again with an earlier end, an entry keeps the end it has.
    const again = await call(tokens.admin, 'POST', '/v1/tokens/revocations', { jti: claimsOf(byJti).jti, exp: claimsOf(byJti).exp });
    expect(again.body.expiresAt).toBe(answers[2].body.expiresAt);
  });

  it('a jti with an exp already past (beyond the clock skew) is refused with 422 naming exp: it would revoke nothing', async () => {
    const token = await mint({ sub: 'rev-past-exp', roles: ['agent'] });
    const { jti, exp } = decodeJwt(token) as { jti: string; exp: number };
    const skew = t.elma.config.auth.clockSkewSeconds;
    for (const past of [1, Math.floor(Date.now() / 1000) - skew - 5]) {
      const refused = await call(tokens.admin, 'POST', '/v1/tokens/revocations', { jti, exp: past });
      expect([refused.status, refused.body.code], refused.text).toEqual([422, 'REQUEST.VALIDATION_FAILED']);
      expect(refused.type).toMatch(/application\/problem\+json/);
      expect(refused.body.errors).toEqual([expect.objectContaining({ path: 'exp' })]);
      expect(refused.text).not.toContain(jti);
    }
    // Nothing was written: the token still works, and its real exp revokes it.
    expect((await call(token, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 })).status).toBe(200);
    expect((await call(tokens.admin, 'POST', '/v1/tokens/revocations', { jti, exp })).status).toBe(201);
    const denied = await call(token, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 });
    expect([denied.status, denied.body.code]).toEqual([401, 'AUTH.TOKEN_REVOKED']);
  });

  it('a revoked token gets 401 AUTH.TOKEN_REVOKED at once, other tokens are unaffected, and the audit trail records the id only', async () => {
    const { jti, exp } = decodeJwt(tokens.agent);
    const revoked = await call(tokens.admin, 'POST', '/v1/tokens/revocations', { jti });
    expect(revoked.status, revoked.text).toBe(201);
    // The entry lives no longer than the longest token accepted now could (ELMA_TOKEN_MAX_TTL plus skew), not forever.
    expect(Date.parse(revoked.body.expiresAt) / 1000).toBeLessThanOrEqual(Date.now() / 1000 + 24 * 3600 + 61);
    expect(Date.parse(revoked.body.expiresAt) / 1000).toBeGreaterThanOrEqual(exp!);

    const denied = await call(tokens.agent, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 });
    expect(denied.status).toBe(401);
    expect(denied.type).toMatch(/application\/problem\+json/);
    expect(denied.body).toMatchObject({ status: 401, code: 'AUTH.TOKEN_REVOKED' });
    expect(denied.text).not.toContain(tokens.agent);
    const graphql = await call(tokens.agent, 'POST', '/graphql', { query: '{ memory(id: "m1") { id } }' });
    expect(graphql.text).toContain('AUTH.TOKEN_REVOKED');
    expect((await call(tokens.agent2, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 })).status).toBe(200);

    const entries = [];
    for await (const entry of t.elma.audit.export('acme')) entries.push(entry);
    const entry = entries.find((e) => e.resourceIds.includes(`token:${jti}`));
    expect(entry).toMatchObject({ actor: 'admin-1', operation: 'administer', decision: { effect: 'allow' } });
    expect(JSON.stringify(entries)).not.toContain(tokens.agent.split('.')[2]);
  });

  it('a revocation from another process (elma token revoke) is seen by the running API on the next request', async () => {
    const { jti } = decodeJwt(tokens.agent2);
    const result = spawnSync(process.execPath, elmaArgs('token', 'revoke', '--tenant', 'acme', '--jti', jti!), {
      env: { ...process.env, ELMA_DATA_DIR: t.dataDir, ELMA_EMBEDDER: 'hashing' },
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ tenant: 'acme', jti });
    const denied = await call(tokens.agent2, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 });
    expect(denied.body.code).toBe('AUTH.TOKEN_REVOKED');
    // Or by the token itself: its id and exp are read from it.
    const agent3 = await mint({ sub: 'agent-3', roles: ['agent'] });
    const byToken = spawnSync(process.execPath, elmaArgs('token', 'revoke', '--tenant', 'acme', '--token', agent3), {
      env: { ...process.env, ELMA_DATA_DIR: t.dataDir, ELMA_EMBEDDER: 'hashing' },
      encoding: 'utf8',
    });
    expect(byToken.status, byToken.stderr).toBe(0);
    const { jti: jti3, exp: exp3 } = decodeJwt(agent3);
    expect(JSON.parse(byToken.stdout)).toMatchObject({ tenant: 'acme', jti: jti3 });
    expect(Date.parse(JSON.parse(byToken.stdout).expiresAt) / 1000).toBe(exp3! + t.elma.config.auth.clockSkewSeconds);
    expect((await call(agent3, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 })).body.code).toBe(
      'AUTH.TOKEN_REVOKED',
    );
    // Usage errors exit 2 and change nothing.
    const usage = spawnSync(process.execPath, elmaArgs('token', 'revoke', '--tenant', 'acme'), {
      env: { ...process.env, ELMA_DATA_DIR: t.dataDir },
      encoding: 'utf8',
    });
    expect(usage.status).toBe(2);
    const both = spawnSync(process.execPath, elmaArgs('token', 'revoke', '--tenant', 'acme', '--jti', 'j', '--token', tokens.agent), {
      env: { ...process.env, ELMA_DATA_DIR: t.dataDir },
      encoding: 'utf8',
    });
    expect(both.status).toBe(2);
  });

  it('tokens without jti are accepted unless ELMA_TOKEN_REQUIRE_JTI, which refuses them with AUTH.TOKEN_ID_REQUIRED', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bare = await new SignJWT({ tenant: 'acme', roles: ['agent'], purposes: ['support'], clearance: 'internal' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('bare')
      .setIssuer('elma')
      .setAudience('elma-api')
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(t.elma.config.jwtSecret);
    expect((await call(bare, 'POST', '/v1/recall', { query: 'x', purpose: 'support', budgetTokens: 100 })).status).toBe(200);

    const strict = await startTestApp({ env: { ELMA_TOKEN_REQUIRE_JTI: 'true' } });
    try {
      const secret = strict.elma.config.jwtSecret;
      const bareThere = await new SignJWT({ tenant: 'acme', roles: ['agent'], purposes: ['support'], clearance: 'internal' })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('bare')
        .setIssuer('elma')
        .setAudience('elma-api')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(secret);
      const response = await fetch(`${strict.url}/v1/recall`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bareThere}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'x', purpose: 'support', budgetTokens: 100 }),
      });
      expect(response.status).toBe(401);
      expect(((await response.json()) as { code: string }).code).toBe('AUTH.TOKEN_ID_REQUIRED');
      const minted = await strict.token({ roles: ['agent'], purposes: ['support'] });
      const ok = await fetch(`${strict.url}/v1/recall`, {
        method: 'POST',
        headers: { authorization: `Bearer ${minted}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'x', purpose: 'support', budgetTokens: 100 }),
      });
      expect(ok.status).toBe(200);
    } finally {
      await strict.close();
    }
  });
});

describe('key rotation over HTTP', () => {
  it('rotates the caller’s tenant key online (admin only): data keys re-wrapped, everything still readable and recallable, Chinese included', async () => {
    const writer = await mint({ sub: 'writer', roles: ['agent'] });
    const ingest = await call(writer, 'POST', '/v1/events', {
      events: [chatEvent('cust-1', '客户要求把发票寄到上海办公室'), chatEvent('cust-2', 'The customer prefers invoices by post')],
    });
    expect(ingest.status, ingest.text).toBeLessThan(300);
    expect(await recallTexts(writer, '发票')).toEqual(expect.arrayContaining([expect.stringContaining('上海')]));

    expect((await call(writer, 'POST', '/v1/keys/rotations', { scope: 'tenant' })).status).toBe(403);
    expect((await call(tokens.admin, 'POST', '/v1/keys/rotations', { scope: 'master' })).status).toBe(422);
    const started = await call(tokens.admin, 'POST', '/v1/keys/rotations', { scope: 'tenant' });
    expect(started.status, started.text).toBe(202);
    expect(started.body).toMatchObject({ tenant: 'acme', current: 2 });
    await t.elma.keys.settled();
    const status = await call(tokens.admin, 'GET', '/v1/keys/rotations/current');
    expect(status.body).toMatchObject({ tenant: 'acme', current: 2, retiring: [], remaining: 0, state: 'done' });
    expect(status.body.rotation).toMatchObject({ kind: 'tenant', target: 'v2', state: 'done' });

    // Writes go on under the new key; a full replay decrypts every event (old and new) with its unchanged data key.
    expect((await call(writer, 'POST', '/v1/events', { events: [chatEvent('cust-3', 'Invoices go to Berlin now')] })).status).toBeLessThan(
      300,
    );
    await t.elma.runner.waitFor(await t.elma.log.headPosition());
    await t.elma.views.drop('acme');
    await t.elma.views.replay('acme');
    expect(await recallTexts(writer, '发票')).toEqual(expect.arrayContaining([expect.stringContaining('上海')]));
    expect(await recallTexts(writer, 'invoices Berlin')).toEqual(expect.arrayContaining([expect.stringContaining('Berlin')]));

    // A token forged with anything but the JWT secret is still refused after the rotation.
    const forged = await new SignJWT({ tenant: 'acme', roles: ['admin'], purposes: ['support'], clearance: 'restricted' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('mallory')
      .setJti('x')
      .setIssuer('elma')
      .setAudience('elma-api')
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(t.elma.config.masterKey);
    expect((await call(forged, 'GET', '/v1/keys/rotations/current')).body.code).toBe('AUTH.TOKEN_INVALID');
  });

  it('after a signing key rotation the JWKS serves old and new keys: an old certificate still verifies with `elma verify-certificate`, a forged one does not', async () => {
    const oldKid = t.elma.signer.keyId;
    const before = t.elma.signer.sign(makeCertificate({ keyId: oldKid, records: 2 }));
    const { kid } = await t.elma.keyVault!.rotateSigningKey();
    const after = t.elma.signer.sign(makeCertificate({ keyId: kid, records: 1 }));

    const jwks = (await (await fetch(`${t.url}/.well-known/elma-keys`)).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toEqual([kid, oldKid]);

    // Asynchronously: this process serves the JWKS the command fetches.
    const verify = (document: unknown) => {
      const file = join(t.dataDir, `certificate-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, JSON.stringify(document));
      return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          elmaArgs('verify-certificate', file, '--jwks', `${t.url}/.well-known/elma-keys`),
          (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
        );
      });
    };
    const [first, second] = await Promise.all([verify(before), verify(after)]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain(`signed by ${oldKid}`);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toContain(`signed by ${kid}`);
    const forged = structuredClone(before);
    forged.certificate.closure.size = 99;
    const refused = await verify(forged);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('signature does not match');
  });
});
