import { z } from 'zod';
import { DomainError, type IdentityProvider, type SignInGrant } from '@elma/domain';
import type { OidcConfig } from '../config/config';

/**
 * Console sign-in through the organisation's identity provider: OpenID Connect authorization code with PKCE
 * (RFC 7636, S256). The browser goes to the provider and comes back to `/console/` with a code; the API
 * exchanges that code (with the verifier only the browser knows) at the provider's token endpoint, so the
 * console's page never talks to another origin. The access token that comes back is an ordinary ELMA bearer
 * token: verified with the provider's keys (ELMA_JWKS_URL), carrying the tenant, roles, purposes and clearance
 * claims like any other. Nothing here logs or echoes a code, a verifier or a token.
 */

/** No identity provider is configured: the console offers token sign-in only. */
export class SignInNotConfigured extends DomainError {
  constructor() {
    super('SIGN_IN.NOT_CONFIGURED', 'no identity provider is configured (ELMA_OIDC_ISSUER); sign in with a token');
  }
}

/** The provider cannot be reached, or answered something that is not OpenID Connect: a fault on its side or in configuration. */
export class IdentityProviderUnavailable extends DomainError {
  constructor(reason: string) {
    super('SIGN_IN.PROVIDER_UNAVAILABLE', `the identity provider ${reason}; retry shortly or sign in with a token`, {
      retryAfterSeconds: 5,
    });
  }
}

/** The provider refused the code (used, expired, for another client or another verifier). */
export class SignInRefused extends DomainError {
  constructor(error: string) {
    super('SIGN_IN.REFUSED', `the identity provider refused the sign-in (${error}); sign in again`);
  }
}

export interface SignedIn {
  accessToken: string;
  tokenType: 'Bearer';
  /** Seconds the access token lives, as the provider said. */
  expiresIn?: number;
}

const Discovery = z.object({
  issuer: z.string(),
  // Only http(s): the console navigates to this address; a `javascript:` one would run in its origin.
  authorization_endpoint: z.url({ protocol: /^https?$/ }),
  token_endpoint: z.url({ protocol: /^https?$/ }),
  code_challenge_methods_supported: z.array(z.string()).optional(),
});

const TokenAnswer = z.object({
  access_token: z.string().min(1),
  token_type: z.string().regex(/^bearer$/i),
  expires_in: z.coerce.number().int().positive().optional(),
});

const ErrorAnswer = z.object({ error: z.string() });

/** A provider's metadata is read again after this, so a moved endpoint is picked up without a restart. */
const DISCOVERY_TTL_MS = 3_600_000;

export class OidcSignIn {
  private discovered?: { at: number; metadata: z.infer<typeof Discovery> };

  constructor(
    private readonly config: OidcConfig,
    private readonly options: { timeoutMs?: number; nowMs?: () => number } = {},
  ) {}

  /** The provider the console sends a browser to (its metadata read from the issuer's discovery document). */
  async provider(): Promise<IdentityProvider> {
    const metadata = await this.metadata();
    const { issuer, clientId, scope, resource, providerName } = this.config;
    return {
      ...(providerName ? { name: providerName } : {}),
      issuer,
      authorizationEndpoint: metadata.authorization_endpoint,
      clientId,
      scope,
      ...(resource ? { resource } : {}),
    };
  }

  /** Exchanges the code the provider redirected with for its access token (RFC 6749 §4.1.3 with RFC 7636 §4.5). */
  async exchange(grant: SignInGrant): Promise<SignedIn> {
    const metadata = await this.metadata();
    const { clientId, clientSecret, resource } = this.config;
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code: grant.code,
      redirect_uri: grant.redirectUri,
      code_verifier: grant.codeVerifier,
      client_id: clientId,
    });
    if (resource) form.set('resource', resource);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    // client_secret_basic (RFC 6749 §2.3.1): both parts form-encoded before base64.
    if (clientSecret)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
    const response = await this.request(metadata.token_endpoint, { method: 'POST', headers, body: form });
    const body = await response.json().catch(() => undefined);
    if (response.ok) {
      const answer = TokenAnswer.safeParse(body);
      if (!answer.success) throw new IdentityProviderUnavailable('answered the code exchange without a bearer access token');
      return {
        accessToken: answer.data.access_token,
        tokenType: 'Bearer',
        ...(answer.data.expires_in ? { expiresIn: answer.data.expires_in } : {}),
      };
    }
    const refusal = ErrorAnswer.safeParse(body);
    if (response.status >= 400 && response.status < 500 && refusal.success) throw new SignInRefused(errorCode(refusal.data.error));
    throw new IdentityProviderUnavailable(`answered the code exchange with HTTP ${response.status}`);
  }

  private async metadata(): Promise<z.infer<typeof Discovery>> {
    const now = this.options.nowMs?.() ?? Date.now();
    if (this.discovered && now - this.discovered.at < DISCOVERY_TTL_MS) return this.discovered.metadata;
    const issuer = this.config.issuer;
    const response = await this.request(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`, { method: 'GET' });
    if (!response.ok) throw new IdentityProviderUnavailable(`answered its discovery document with HTTP ${response.status}`);
    const parsed = Discovery.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw new IdentityProviderUnavailable('has no usable discovery document (authorization and token endpoints)');
    // OpenID Connect Discovery §4.3: the document must name the issuer it was asked for, exactly.
    if (parsed.data.issuer !== issuer)
      throw new IdentityProviderUnavailable('names another issuer than ELMA_OIDC_ISSUER in its discovery document');
    const methods = parsed.data.code_challenge_methods_supported;
    if (methods && !methods.includes('S256')) throw new IdentityProviderUnavailable('does not support PKCE with S256');
    this.discovered = { at: now, metadata: parsed.data };
    return parsed.data;
  }

  private async request(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000) });
    } catch {
      throw new IdentityProviderUnavailable(`cannot be reached at ${new URL(url).origin}`);
    }
  }
}

/** RFC 6749 error codes are short ASCII words; anything else is not repeated to the caller. */
function errorCode(error: string): string {
  return /^[a-z_]{1,40}$/.test(error) ? error : 'unknown error';
}
