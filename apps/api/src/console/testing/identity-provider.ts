import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors, type Configuration } from 'oidc-provider';

/**
 * A real OpenID Connect provider for the tests (panva's oidc-provider, certified by the OpenID Foundation), on a
 * loopback port: discovery, its development sign-in and consent pages, authorization code with PKCE, and JWT
 * access tokens (RS256) for the resource ELMA is, carrying ELMA's claims (tenant, roles, purposes, clearance,
 * name) the way an organisation's Keycloak or Okta would be configured to add them.
 *
 * The provider listens first (so ELMA can be configured with its issuer), and learns its client's redirect
 * address once ELMA listens too (`register`).
 */
export interface TestIdentityProvider {
  issuer: string;
  jwksUrl: string;
  /** The console's client (public: PKCE, no secret). */
  clientId: string;
  /** The resource indicator its access tokens are issued for (ELMA_OIDC_RESOURCE). */
  resource: string;
  register(redirectUri: string): void;
  /**
   * Walks the provider's pages as a browser does (following redirects by hand, keeping its cookies), signing
   * in as `login` (any password) and consenting, and returns where the provider then sends the browser: the
   * redirect URI with a code (or an error).
   */
  authorize(login: string, request: { redirectUri: string; challenge: string; state: string }): Promise<URL>;
  /** The environment that points ELMA at this provider. */
  env(): Record<string, string>;
  close(): Promise<void>;
}

/** A staff member the provider signs in: the login is the account id, any password is accepted. */
export type Account = Record<string, unknown> & { name?: string };

export async function startIdentityProvider(options: {
  accounts: Record<string, Account>;
  /** The `aud` of its access tokens (ELMA_JWT_AUDIENCE). */
  audience?: string;
}): Promise<TestIdentityProvider> {
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => {
    if (handle) return handle(req, res);
    res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'elma-console';
  const resource = 'urn:elma:api';
  const audience = options.audience ?? 'elma-api';
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const key = { ...(await exportJWK(privateKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };

  const configuration = (redirectUri: string): Configuration => ({
    clients: [
      {
        client_id: clientId,
        token_endpoint_auth_method: 'none',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [key] },
    cookies: { keys: [randomUUID()] },
    claims: { openid: ['sub'], profile: ['name'] },
    findAccount: (_ctx, id) => {
      const account = options.accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...(account.name ? { name: account.name } : {}) }) };
    },
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return { scope: 'elma', audience, accessTokenTTL: 3600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    // ELMA's claims in the access token, from the account (never in the ID token's profile).
    extraTokenClaims: (_ctx, token) => {
      if (token.kind !== 'AccessToken' || !token.accountId) return undefined;
      return options.accounts[token.accountId] as Record<string, unknown> | undefined;
    },
    ttl: { AccessToken: 3600, IdToken: 3600, AuthorizationCode: 60, Interaction: 600, Session: 3600, Grant: 3600 },
  });

  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    clientId,
    resource,
    register(redirectUri) {
      handle = new Provider(issuer, configuration(redirectUri)).callback();
    },
    authorize: (login, request) => walk(issuer, login, { clientId, resource, ...request }),
    env: () => ({
      ELMA_OIDC_ISSUER: issuer,
      ELMA_OIDC_CLIENT_ID: clientId,
      ELMA_OIDC_RESOURCE: resource,
      ELMA_JWKS_URL: `${issuer}/jwks`,
      ELMA_JWT_ISSUER: issuer,
      ELMA_JWT_AUDIENCE: audience,
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A PKCE pair (RFC 7636): the verifier stays with the client, the challenge goes to the provider. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

async function walk(
  issuer: string,
  login: string,
  request: { clientId: string; resource: string; redirectUri: string; challenge: string; state: string },
): Promise<URL> {
  const start = new URL(`${issuer}/auth`);
  for (const [name, value] of Object.entries({
    response_type: 'code',
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    scope: 'openid profile',
    resource: request.resource,
    state: request.state,
    code_challenge: request.challenge,
    code_challenge_method: 'S256',
  }))
    start.searchParams.set(name, value);
  const cookies = new Map<string, string>();
  const go = async (url: string, init: RequestInit = {}): Promise<Response> => {
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    return response;
  };
  let url = start.href;
  for (let hop = 0; hop < 20; hop++) {
    const response = await go(url);
    const location = response.headers.get('location');
    if (location) {
      const next = new URL(location, url);
      if (next.href.startsWith(request.redirectUri)) return next;
      url = next.href;
      continue;
    }
    // A page with a form: the sign-in (login and password) or the consent.
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`the provider answered ${response.status} without a sign-in or consent form`);
    const form = new URLSearchParams({ prompt, ...(prompt === 'login' ? { login, password: 'any' } : {}) });
    const submitted = await go(new URL(action, url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    url = new URL(submitted.headers.get('location')!, url).href;
  }
  throw new Error('the provider did not send the browser back');
}
