import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type JWTPayload } from 'jose';
import { TENANT_ID_PATTERN } from '@elma/domain';
import { startTestApp, type TestApp } from '../testing';
import { RedTeam, type Secret } from './harness';

/**
 * Red team: forged, stale, premature, over-long and misdirected tokens, over
 * real HTTP. Every refusal is a 401 problem+json with a code saying which
 * check failed and nothing of the token; nothing is served to a token the
 * rules refuse. A second app verifies RS256 and ES256 tokens against a JWKS
 * served by a real local HTTP server, the way an identity provider does.
 */
type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
const NOW = () => Math.floor(Date.now() / 1000);
const HOUR = 3600;
/** `iat` now and `exp` that many seconds after it, read from one clock tick (two reads can straddle a second). */
const lasting = (seconds: number) => {
  const iat = NOW();
  return { iat, exp: iat + seconds };
};
/** Planted in the token's subject: an answer that shows it echoes the token. */
const MARKER = 'tokmarker7f3q';

let t: TestApp;
let red: RedTeam;
let secret: Uint8Array;
/** The probes against the app that verifies with the identity provider's keys. */
let jwksRed: RedTeam | undefined;

const claims = (extra: JWTPayload = {}): JWTPayload => ({
  tenant: 'acme',
  sub: `agent-${MARKER}`,
  roles: ['agent'],
  purposes: ['support'],
  clearance: 'internal',
  iss: 'elma',
  aud: 'elma-api',
  ...extra,
});

/** A token with exactly these claims (no defaults from jose), signed HS256 with `key`. */
const hs256 = (payload: JWTPayload, key: Uint8Array = secret) =>
  new SignJWT(payload).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** What no answer to a token may show: the token itself, its signature, its subject. */
const echoes = (token: string): Secret[] => [
  { id: token.split('.')[2] || token, marker: MARKER, label: 'token echo' },
  { id: token, marker: token.split('.')[1] ?? token, label: 'token echo' },
];

/** Three surfaces per token: a REST read, a REST write and GraphQL. */
async function refused(label: string, token: string, code: string, status = 401) {
  for (const request of [
    { method: 'GET', path: '/v1/memories/mem_ep_00000000-0000-4000-8000-000000000000' },
    { method: 'POST', path: '/v1/recall', body: { query: 'renewal', purpose: 'support' } },
  ]) {
    const result = await red.probe(label, { token, ...request }, echoes(token));
    expect(result.status, `${label} ${request.path}: ${result.text}`).toBe(status);
    expect(result.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(JSON.parse(result.text).code, label).toBe(code);
  }
  const graphql = await red.probe(
    label,
    { token, method: 'POST', path: '/graphql', body: { query: '{ memory(id: "mem_x") { id } }' } },
    echoes(token),
  );
  expect(JSON.parse(graphql.text).errors?.[0]?.extensions?.code, label).toBe(code);
}

async function accepted(label: string, token: string) {
  const result = await red.probe(label, { token, method: 'POST', path: '/v1/recall', body: { query: 'renewal', purpose: 'support' } }, []);
  expect(result.status, `${label}: ${result.text}`).toBe(200);
}

beforeAll(async () => {
  t = await startTestApp();
  red = new RedTeam(t, 'tokens');
  secret = Buffer.from(readFileSync(join(t.dataDir, 'jwt.secret'), 'utf8').trim(), 'hex');
}, 60_000);

afterAll(async () => {
  await (red ? red.close() : t?.close());
});

describe('HS256 tokens (the embedded default)', () => {
  it('accepts a token minted by the test helper and by hand within the rules', async () => {
    await accepted('helper', await t.token());
    await accepted('by hand', await hs256(claims({ iat: NOW(), exp: NOW() + HOUR })));
    // Exactly the maximum lifetime, and no iat: exp is measured from now.
    await accepted('max lifetime', await hs256(claims(lasting(24 * HOUR))));
    await accepted('no iat', await hs256(claims({ exp: NOW() + HOUR })));
  });

  it('refuses a token without exp, however it is otherwise valid (an iat ten years old got 200)', async () => {
    await refused('no exp', await hs256(claims({ iat: NOW() - 10 * 365 * 24 * HOUR })), 'AUTH.TOKEN_EXPIRY_REQUIRED');
    await refused('no exp, fresh', await hs256(claims({ iat: NOW() })), 'AUTH.TOKEN_EXPIRY_REQUIRED');
  });

  it('refuses a token that lives longer than ELMA_TOKEN_MAX_TTL (24 h by default)', async () => {
    await refused('exp too far', await hs256(claims({ iat: NOW(), exp: NOW() + 24 * HOUR + 120 })), 'AUTH.TOKEN_LIFETIME_TOO_LONG');
    await refused('exp a year out', await hs256(claims({ iat: NOW(), exp: NOW() + 365 * 24 * HOUR })), 'AUTH.TOKEN_LIFETIME_TOO_LONG');
    await refused('exp too far, no iat', await hs256(claims({ exp: NOW() + 25 * HOUR })), 'AUTH.TOKEN_LIFETIME_TOO_LONG');
    // Issued long ago with a long life, still within its exp: the lifetime counts, not what is left of it.
    await refused('old and long', await hs256(claims({ iat: NOW() - 30 * 24 * HOUR, exp: NOW() + HOUR })), 'AUTH.TOKEN_LIFETIME_TOO_LONG');
  });

  it('refuses an expired token, allowing 60 s of clock skew', async () => {
    await refused('expired', await hs256(claims({ iat: NOW() - 2 * HOUR, exp: NOW() - HOUR })), 'AUTH.TOKEN_EXPIRED');
    await refused('expired past skew', await hs256(claims({ iat: NOW() - HOUR, exp: NOW() - 90 })), 'AUTH.TOKEN_EXPIRED');
    await accepted('expired within skew', await hs256(claims({ iat: NOW() - HOUR, exp: NOW() - 20 })));
  });

  it('refuses a token not valid yet (nbf) or issued in the future (iat), allowing 60 s of skew', async () => {
    await refused('nbf future', await hs256(claims({ iat: NOW(), nbf: NOW() + 600, exp: NOW() + HOUR })), 'AUTH.TOKEN_NOT_YET_VALID');
    await refused('iat future', await hs256(claims({ iat: NOW() + 600, exp: NOW() + HOUR })), 'AUTH.TOKEN_NOT_YET_VALID');
    await accepted('nbf within skew', await hs256(claims({ iat: NOW(), nbf: NOW() + 20, exp: NOW() + HOUR })));
    await accepted('iat within skew', await hs256(claims({ iat: NOW() + 20, exp: NOW() + HOUR })));
  });

  it('refuses the wrong issuer or audience', async () => {
    await refused('wrong iss', await hs256(claims({ iss: 'someone-else', iat: NOW(), exp: NOW() + HOUR })), 'AUTH.TOKEN_INVALID');
    await refused('wrong aud', await hs256(claims({ aud: 'another-api', iat: NOW(), exp: NOW() + HOUR })), 'AUTH.TOKEN_INVALID');
    await refused('no iss', await hs256(claims({ iss: undefined, iat: NOW(), exp: NOW() + HOUR })), 'AUTH.TOKEN_INVALID');
  });

  it('refuses alg none, another key, an asymmetric algorithm and garbage', async () => {
    const payload = b64(claims({ iat: NOW(), exp: NOW() + HOUR }));
    await refused('alg none', `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`, 'AUTH.TOKEN_INVALID');
    await refused('alg None', `${b64({ alg: 'None' })}.${payload}.x`, 'AUTH.TOKEN_INVALID');
    await refused('other secret', await hs256(claims({ iat: NOW(), exp: NOW() + HOUR }), new Uint8Array(32).fill(7)), 'AUTH.TOKEN_INVALID');
    const { privateKey } = await generateKeyPair('RS256');
    const rs = await new SignJWT(claims({ iat: NOW(), exp: NOW() + HOUR })).setProtectedHeader({ alg: 'RS256' }).sign(privateKey);
    await refused('RS256 on an HS256 server', rs, 'AUTH.TOKEN_INVALID');
    await refused('garbage', `${MARKER}.${MARKER}.${MARKER}`, 'AUTH.TOKEN_INVALID');
    await refused(
      'tampered payload',
      `${(await t.token()).split('.')[0]}.${b64(claims({ roles: ['admin'], exp: NOW() + HOUR }))}.${(await t.token()).split('.')[2]}`,
      'AUTH.TOKEN_INVALID',
    );
  });

  it('refuses a tenant claim that breaks the tenant-name rule with a detail naming the rule, not echoing the name', async () => {
    const token = await hs256(claims({ tenant: 'lc-X', iat: NOW(), exp: NOW() + HOUR }));
    await refused('bad tenant name', token, 'AUTH.TOKEN_INVALID');
    const { detail } = JSON.parse(
      (await red.send({ token, method: 'POST', path: '/v1/recall', body: { query: 'x', purpose: 'support' } })).text,
    );
    expect(detail).toContain('tenant');
    expect(detail).toContain(TENANT_ID_PATTERN.source);
    expect(detail).not.toContain('lc-X');
  });

  it('refuses a role that is neither built in nor named by the tenant policy, and accepts one the policy names', async () => {
    await refused('unknown role', await t.token({ roles: ['superuser'] }), 'AUTH.UNKNOWN_ROLE');
    await refused('unknown among known', await t.token({ roles: ['agent', 'root'] }), 'AUTH.UNKNOWN_ROLE');
    // A tenant's policy gives the role a meaning: from then on it is known in that tenant only.
    const admin = await t.token({ sub: 'admin-1', roles: ['admin'] });
    const current = await red.send({ token: admin, method: 'GET', path: '/v1/policy' });
    const { version: _version, ...policy } = JSON.parse(current.text);
    policy.rules.push({ id: 'night-shift-reads', operations: ['read'], when: { roles: ['night-shift'], maxSensitivity: 'internal' } });
    const put = await red.send({ token: admin, method: 'PUT', path: '/v1/policy', body: policy });
    expect(put.status, put.text).toBe(200);
    await accepted('policy role', await t.token({ roles: ['night-shift'] }));
    await refused('policy role, other tenant', await t.token({ tenant: 'globex', roles: ['night-shift'] }), 'AUTH.UNKNOWN_ROLE');
  });
});

describe('issuer, audience and lifetime are configurable', () => {
  let custom: TestApp;
  beforeAll(async () => {
    custom = await startTestApp({
      env: { ELMA_JWT_ISSUER: 'https://id.example.test/', ELMA_JWT_AUDIENCE: 'memory', ELMA_TOKEN_MAX_TTL: '1h' },
    });
  }, 60_000);
  afterAll(async () => custom?.close());

  it('accepts only the configured issuer and audience, and caps the lifetime at the configured maximum', async () => {
    const key = Buffer.from(readFileSync(join(custom.dataDir, 'jwt.secret'), 'utf8').trim(), 'hex');
    const recall = async (token: string) => {
      const response = await fetch(`${custom.url}/v1/recall`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'renewal', purpose: 'support' }),
      });
      return { status: response.status, body: (await response.json()) as { code?: string } };
    };
    expect((await recall(await custom.token())).status).toBe(200);
    const issued = NOW();
    const own = claims({ iss: 'https://id.example.test/', aud: 'memory', iat: issued });
    expect(await recall(await hs256({ ...own, exp: issued + HOUR }, key))).toMatchObject({ status: 200 });
    expect(await recall(await hs256({ ...own, exp: issued + 2 * HOUR }, key))).toMatchObject({
      status: 401,
      body: { code: 'AUTH.TOKEN_LIFETIME_TOO_LONG' },
    });
    expect(await recall(await hs256({ ...own, iss: 'elma', exp: issued + HOUR }, key))).toMatchObject({
      status: 401,
      body: { code: 'AUTH.TOKEN_INVALID' },
    });
    expect(await recall(await hs256({ ...own, aud: 'elma-api', exp: issued + HOUR }, key))).toMatchObject({
      status: 401,
      body: { code: 'AUTH.TOKEN_INVALID' },
    });
    // One of several audiences is enough.
    expect(await recall(await hs256({ ...own, aud: ['other', 'memory'], exp: issued + HOUR }, key))).toMatchObject({ status: 200 });
  });
});

describe('asymmetric tokens from an identity provider (JWKS)', () => {
  let idp: Server;
  let idpUrl: string;
  let jwksApp: TestApp;
  let rsa: KeyPair;
  let ec: KeyPair;
  let jwksRequests = 0;

  beforeAll(async () => {
    rsa = await generateKeyPair('RS256', { extractable: true });
    ec = await generateKeyPair('ES256', { extractable: true });
    const keys = [
      { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
      { ...(await exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
    ];
    idp = createServer((request, response) => {
      jwksRequests += 1;
      if (request.url !== '/.well-known/jwks.json') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
    });
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    idpUrl = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    jwksApp = await startTestApp({
      env: { ELMA_JWKS_URL: `${idpUrl}/.well-known/jwks.json`, ELMA_JWT_ISSUER: idpUrl, ELMA_JWT_AUDIENCE: 'elma-api' },
    });
    jwksRed = new RedTeam(jwksApp, 'tokens/jwks');
  }, 60_000);

  afterAll(async () => {
    await (jwksRed ? jwksRed.close() : jwksApp?.close());
    await new Promise((resolve) => idp?.close(resolve));
  });

  const signed = (alg: 'RS256' | 'ES256', kid: string, key: KeyPair['privateKey'], extra: JWTPayload = {}) =>
    new SignJWT(claims({ iss: idpUrl, iat: NOW(), exp: NOW() + HOUR, ...extra })).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);

  const recall = (token: string) => ({ token, method: 'POST', path: '/v1/recall', body: { query: 'renewal', purpose: 'support' } });

  it('accepts RS256 and ES256 tokens signed with the provider keys, fetching the JWKS once', async () => {
    for (const [label, token] of [
      ['RS256', await signed('RS256', 'rsa-1', rsa.privateKey)],
      ['ES256', await signed('ES256', 'ec-1', ec.privateKey)],
      ['ES256 again', await signed('ES256', 'ec-1', ec.privateKey)],
    ] as const) {
      const result = await jwksRed!.probe(label, recall(token), echoes(token));
      expect(result.status, `${label}: ${result.text}`).toBe(200);
    }
    expect(jwksRequests).toBe(1);
  });

  it('refuses the shared secret, HS256 keyed with the public key, a foreign key, an unknown kid, expiry and lifetime faults', async () => {
    const check = async (label: string, token: string, code: string) => {
      const result = await jwksRed!.probe(label, recall(token), echoes(token));
      expect(result.status, `${label}: ${result.text}`).toBe(401);
      expect(JSON.parse(result.text).code, label).toBe(code);
    };
    const jwksSecret = Buffer.from(readFileSync(join(jwksApp.dataDir, 'jwt.secret'), 'utf8').trim(), 'hex');
    await check(
      'shared secret HS256',
      await hs256(claims({ iss: idpUrl, iat: NOW(), exp: NOW() + HOUR }), jwksSecret),
      'AUTH.TOKEN_INVALID',
    );
    // Algorithm confusion: the provider's public key (PEM or JWK text) used as an HMAC secret.
    const pem = new TextEncoder().encode(await exportSPKI(rsa.publicKey));
    await check(
      'HS256 with public PEM',
      await new SignJWT(claims({ iss: idpUrl, iat: NOW(), exp: NOW() + HOUR }))
        .setProtectedHeader({ alg: 'HS256', kid: 'rsa-1' })
        .sign(pem),
      'AUTH.TOKEN_INVALID',
    );
    const jwkText = new TextEncoder().encode(JSON.stringify(await exportJWK(rsa.publicKey)));
    await check(
      'HS256 with public JWK',
      await new SignJWT(claims({ iss: idpUrl, iat: NOW(), exp: NOW() + HOUR }))
        .setProtectedHeader({ alg: 'HS256', kid: 'rsa-1' })
        .sign(jwkText),
      'AUTH.TOKEN_INVALID',
    );
    await check(
      'alg none',
      `${b64({ alg: 'none', kid: 'rsa-1' })}.${b64(claims({ iss: idpUrl, exp: NOW() + HOUR }))}.`,
      'AUTH.TOKEN_INVALID',
    );
    const foreign = await generateKeyPair('RS256');
    await check('foreign key, known kid', await signed('RS256', 'rsa-1', foreign.privateKey), 'AUTH.TOKEN_INVALID');
    await check('unknown kid', await signed('RS256', 'rsa-9', foreign.privateKey), 'AUTH.TOKEN_INVALID');
    await check('ES256 key under RS256 kid', await signed('ES256', 'rsa-1', ec.privateKey), 'AUTH.TOKEN_INVALID');
    await check(
      'no exp',
      await new SignJWT(claims({ iss: idpUrl, iat: NOW() })).setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' }).sign(rsa.privateKey),
      'AUTH.TOKEN_EXPIRY_REQUIRED',
    );
    await check(
      'expired',
      await signed('RS256', 'rsa-1', rsa.privateKey, { iat: NOW() - 2 * HOUR, exp: NOW() - HOUR }),
      'AUTH.TOKEN_EXPIRED',
    );
    await check('too long', await signed('ES256', 'ec-1', ec.privateKey, { exp: NOW() + 48 * HOUR }), 'AUTH.TOKEN_LIFETIME_TOO_LONG');
    await check('wrong issuer', await signed('ES256', 'ec-1', ec.privateKey, { iss: 'elma' }), 'AUTH.TOKEN_INVALID');
    await check('unknown role', await signed('ES256', 'ec-1', ec.privateKey, { roles: ['superuser'] }), 'AUTH.UNKNOWN_ROLE');
  });

  it('answers 503 AUTH.KEYS_UNAVAILABLE, not 401 or 500, while the provider cannot be reached', async () => {
    const down = await startTestApp({ env: { ELMA_JWKS_URL: 'http://127.0.0.1:9/jwks.json', ELMA_JWT_ISSUER: idpUrl } });
    try {
      const response = await fetch(`${down.url}/v1/recall`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await signed('RS256', 'rsa-1', rsa.privateKey)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'renewal', purpose: 'support' }),
      });
      expect(response.status).toBe(503);
      expect(((await response.json()) as { code: string }).code).toBe('AUTH.KEYS_UNAVAILABLE');
    } finally {
      await down.close();
    }
  });
});

describe('the red team tally', () => {
  it('shows no leak and no 5xx', () => {
    for (const team of [red, jwksRed!]) {
      expect(team.leaks).toEqual([]);
      expect(team.serverErrors).toEqual([]);
    }
  });
});
