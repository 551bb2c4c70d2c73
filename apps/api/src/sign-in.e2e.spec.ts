import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pkce, startIdentityProvider, type TestIdentityProvider } from './console/testing/identity-provider';
import { callApi, startTestApp, type TestApp } from './testing';

/**
 * Sign-in through an identity provider (OpenID Connect, authorization code + PKCE) over real HTTP: a real
 * provider (oidc-provider) on a loopback port, its own sign-in and consent pages walked as a browser would, the code exchanged by ELMA, and the provider's access token used as ELMA's bearer token.
 * The console's browser test drives the same flow through Chromium.
 */

const staff = { tenant: 'acme', purposes: ['support'], clearance: 'restricted' };
let idp: TestIdentityProvider;
let t: TestApp;

beforeAll(async () => {
  idp = await startIdentityProvider({
    accounts: {
      'comp-1': { ...staff, roles: ['compliance', 'dpo'], name: '李娜' },
      // Signed in by the provider, but its token carries none of ELMA's claims.
      visitor: { name: 'Visitor' },
      'ghost-1': { ...staff, roles: ['wizard'] },
    },
  });
  t = await startTestApp({ env: idp.env() });
  idp.register(`${t.url}/console/`);
});

afterAll(async () => {
  await t?.close();
  await idp?.close();
});

async function codeFor(login: string) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(16).toString('base64url');
  const back = await idp.authorize(login, { redirectUri: `${t.url}/console/`, challenge, state });
  expect(back.searchParams.get('state')).toBe(state);
  return { code: back.searchParams.get('code')!, verifier };
}

/** POST /v1/sign-in/token as the console sends it, to `app` (by default the one signed in through the real provider). */
const exchange = (code: string, codeVerifier: string, app: TestApp = t) =>
  callApi(app.url, '', 'POST', '/v1/sign-in/token', { code, codeVerifier, redirectUri: `${app.url}/console/` });

describe('sign-in through the identity provider', () => {
  it('names the provider the console sends a browser to', async () => {
    const answer = await callApi(t.url, '', 'GET', '/v1/sign-in');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      identityProvider: {
        issuer: idp.issuer,
        authorizationEndpoint: `${idp.issuer}/auth`,
        clientId: idp.clientId,
        scope: 'openid profile',
        resource: idp.resource,
      },
    });
  });

  it("exchanges the code for the provider's access token, which is then an ELMA bearer token", async () => {
    const { code, verifier } = await codeFor('comp-1');
    const signedIn = await exchange(code, verifier);
    expect(signedIn.status, signedIn.text).toBe(200);
    const { accessToken, tokenType, principal } = signedIn.body as { accessToken: string; tokenType: string; principal: unknown };
    expect(tokenType).toBe('Bearer');
    expect(principal).toMatchObject({ tenant: 'acme', sub: 'comp-1', roles: ['compliance', 'dpo'], name: '李娜' });
    const session = await callApi(t.url, accessToken, 'GET', '/v1/session');
    expect(session.status, session.text).toBe(200);
    expect(session.body).toEqual(principal);
    expect((await callApi(t.url, accessToken, 'GET', '/v1/erasures')).status).toBe(200);

    // The same code a second time (a replayed redirect, a leaked log line): the provider refuses it.
    const replay = await exchange(code, verifier);
    expect(replay.status, replay.text).toBe(400);
    expect(replay.body).toMatchObject({ code: 'SIGN_IN.REFUSED' });
    expect(replay.text).not.toContain(code);
  });

  it('refuses a code with a verifier other than the one its challenge was made from (PKCE)', async () => {
    const { code } = await codeFor('comp-1');
    const stolen = await exchange(code, pkce().verifier);
    expect(stolen.status, stolen.text).toBe(400);
    expect(stolen.body).toMatchObject({ code: 'SIGN_IN.REFUSED', detail: expect.stringContaining('invalid_grant') });
  });

  it('refuses a token without ELMA claims, or with a role nobody defined, as every request would', async () => {
    const visitor = await codeFor('visitor');
    const refused = await exchange(visitor.code, visitor.verifier);
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body).toMatchObject({ code: 'AUTH.TOKEN_INVALID' });
    expect(refused.text).not.toContain('accessToken');

    const ghost = await codeFor('ghost-1');
    const unknown = await exchange(ghost.code, ghost.verifier);
    expect(unknown.status, unknown.text).toBe(401);
    expect(unknown.body).toMatchObject({ code: 'AUTH.UNKNOWN_ROLE' });
  });

  it('validates what the console sends before anything reaches the provider', async () => {
    const verifier = pkce().verifier;
    for (const [body, path] of [
      [{ code: 'c', codeVerifier: verifier, redirectUri: 'https://attacker.example/console/' }, undefined],
      [{ code: 'c', codeVerifier: verifier, redirectUri: `${t.url}/console/?next=/x` }, 'redirectUri'],
      [{ code: 'c', codeVerifier: verifier, redirectUri: 'javascript:alert(1)' }, 'redirectUri'],
      [{ code: 'c', codeVerifier: 'short', redirectUri: `${t.url}/console/` }, 'codeVerifier'],
      [{ code: '', codeVerifier: verifier, redirectUri: `${t.url}/console/` }, 'code'],
      [{ code: 'c', codeVerifier: verifier, redirectUri: `${t.url}/console/`, tenant: 'globex' }, undefined],
    ] as const) {
      const answer = await callApi(t.url, '', 'POST', '/v1/sign-in/token', body);
      if (path === undefined && body.redirectUri.startsWith('https://attacker')) {
        // Another origin's /console/ is a well-formed address: the provider refuses it (not this client's redirect URI).
        expect(answer.status, answer.text).toBe(400);
        expect(answer.body).toMatchObject({ code: 'SIGN_IN.REFUSED' });
        continue;
      }
      expect(answer.status, `${JSON.stringify(body)}: ${answer.text}`).toBe(422);
      expect(answer.body).toMatchObject({ code: 'REQUEST.VALIDATION_FAILED' });
      if (path) expect(JSON.stringify((answer.body as { errors: unknown }).errors)).toContain(path);
    }
  });
});

describe('sign-in when the identity provider is missing, hostile or down', () => {
  let fake: Server;
  let answer: (path: string) => { status: number; body: unknown } = () => ({ status: 404, body: {} });
  let app: TestApp;

  beforeAll(async () => {
    fake = createServer((req, res) => {
      const { status, body } = answer(req.url ?? '/');
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    app = await startTestApp({ env: { ELMA_OIDC_ISSUER: issuer, ELMA_OIDC_CLIENT_ID: 'elma-console', ELMA_JWKS_URL: `${issuer}/jwks` } });
  });

  afterAll(async () => {
    await app?.close();
    fake?.closeAllConnections();
    await new Promise((resolve) => fake?.close(resolve));
  });

  const issuer = () => `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  const discovery = (overrides: Record<string, unknown>) => () => ({
    status: 200,
    body: { issuer: issuer(), authorization_endpoint: `${issuer()}/auth`, token_endpoint: `${issuer()}/token`, ...overrides },
  });

  it('answers 503 SIGN_IN.PROVIDER_UNAVAILABLE for a discovery document it cannot use, and never passes a script address on', async () => {
    for (const overrides of [
      { issuer: 'https://someone-else.example' },
      { authorization_endpoint: 'javascript:alert(document.domain)' },
      { token_endpoint: undefined },
      { code_challenge_methods_supported: ['plain'] },
    ]) {
      answer = discovery(overrides);
      const options = await callApi(app.url, '', 'GET', '/v1/sign-in');
      expect(options.status, `${JSON.stringify(overrides)}: ${options.text}`).toBe(503);
      expect(options.body).toMatchObject({ code: 'SIGN_IN.PROVIDER_UNAVAILABLE' });
      expect(options.headers.get('retry-after')).toBe('5');
      expect(options.text).not.toContain('javascript:');
    }
  });

  it("says the provider refused, or failed, without repeating the provider's words", async () => {
    answer = (path) =>
      path.startsWith('/token')
        ? { status: 400, body: { error: 'invalid_grant <script>', error_description: 'code 123 for 王小明 expired' } }
        : discovery({})();
    const refused = await exchange('abc', pkce().verifier, app);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body).toMatchObject({ code: 'SIGN_IN.REFUSED' });
    expect(refused.text).not.toMatch(/script|王小明|123/);

    answer = (path) => (path.startsWith('/token') ? { status: 502, body: {} } : discovery({})());
    const failed = await exchange('abc', pkce().verifier, app);
    expect(failed.status, failed.text).toBe(503);
    expect(failed.body).toMatchObject({ code: 'SIGN_IN.PROVIDER_UNAVAILABLE' });
  });

  it('answers 503 when the provider does not answer at all, and 404 where none is configured', async () => {
    fake.closeAllConnections();
    await new Promise((resolve) => fake.close(resolve));
    const token = await exchange('abc', pkce().verifier, app);
    expect(token.status, token.text).toBe(503);
    expect(token.body).toMatchObject({ code: 'SIGN_IN.PROVIDER_UNAVAILABLE', detail: expect.stringContaining('cannot be reached') });

    const plain = await startTestApp();
    try {
      const options = await callApi(plain.url, '', 'GET', '/v1/sign-in');
      expect(options.status, options.text).toBe(200);
      expect(options.body).toEqual({ identityProvider: null });
      const exchangeThere = await exchange('abc', pkce().verifier, plain);
      expect(exchangeThere.status, exchangeThere.text).toBe(404);
      expect(exchangeThere.body).toMatchObject({ code: 'SIGN_IN.NOT_CONFIGURED' });
    } finally {
      await plain.close();
    }
  });
});
