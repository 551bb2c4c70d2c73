import { randomUUID } from 'node:crypto';
import { SignJWT, createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { DomainError, Principal, TENANT_ID_RULE, unknownRoles, type TenantPolicy } from '@elma/domain';
import type { AuthConfig } from '../config/config';

/**
 * The request carries no usable credential. Each code says which check
 * failed; no message echoes anything of the token.
 */
export class Unauthenticated extends DomainError {
  constructor(reason: string, code: AuthCode = 'AUTH.UNAUTHENTICATED') {
    super(code, reason);
  }
}

export type AuthCode =
  | 'AUTH.UNAUTHENTICATED'
  | 'AUTH.TOKEN_INVALID'
  | 'AUTH.TOKEN_EXPIRED'
  | 'AUTH.TOKEN_NOT_YET_VALID'
  | 'AUTH.TOKEN_EXPIRY_REQUIRED'
  | 'AUTH.TOKEN_LIFETIME_TOO_LONG'
  | 'AUTH.UNKNOWN_ROLE'
  | 'AUTH.TOKEN_REVOKED'
  | 'AUTH.TOKEN_ID_REQUIRED';

/** The deny list as the verifier reads it: is this tenant's token id revoked at `now` (seconds)? */
export interface RevokedTokens {
  isRevoked(tenant: string, jti: string, now: number): boolean;
}

/** The identity provider's keys could not be fetched: the token may be fine, the server cannot tell yet. */
export class KeysUnavailable extends DomainError {
  constructor() {
    super('AUTH.KEYS_UNAVAILABLE', 'the identity provider keys (ELMA_JWKS_URL) cannot be fetched; retry shortly');
  }
}

/** Algorithms accepted from an identity provider's JWKS; never HS256 there, so a public key cannot serve as a shared secret. */
const ASYMMETRIC = ['RS256', 'ES256'];

/**
 * Mints a development token (HS256). Production deployments put an identity provider in front instead.
 * Every token gets a random `jti`, so that it can be revoked on its own (`elma token revoke`).
 */
export async function mintToken(
  secret: Uint8Array,
  claims: Principal,
  options: { ttlSeconds?: number; now?: Date; issuer?: string; audience?: string; jti?: string } = {},
): Promise<string> {
  const principal = Principal.parse(claims);
  const issuedAt = Math.floor((options.now ?? new Date()).getTime() / 1000);
  return new SignJWT({
    tenant: principal.tenant,
    roles: principal.roles,
    purposes: principal.purposes,
    clearance: principal.clearance,
    ...(principal.name ? { name: principal.name } : {}),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(principal.sub)
    .setJti(options.jti ?? randomUUID())
    .setIssuer(options.issuer ?? 'elma')
    .setAudience(options.audience ?? 'elma-api')
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + (options.ttlSeconds ?? 8 * 3600))
    .sign(secret);
}

/**
 * Verifies bearer tokens: signature (HS256 with the shared secret, or RS256/
 * ES256 with the keys of `jwksUrl`), issuer and audience, a required `exp`
 * within the maximum lifetime, `nbf` and `iat` not in the future (each with
 * the configured skew), then the principal's claims and its roles against
 * the built-in ones and those the tenant's policy names, and last that its
 * `jti` is not on the tenant's deny list (a token without `jti` cannot be
 * revoked alone; ELMA_TOKEN_REQUIRE_JTI refuses such tokens).
 */
export class TokenVerifier {
  private readonly key: Uint8Array | JWTVerifyGetKey;
  private readonly algorithms: string[];

  constructor(
    private readonly config: AuthConfig,
    secret: Uint8Array,
    private readonly policyOf: (tenant: string) => Promise<TenantPolicy>,
    private readonly clock: () => Date = () => new Date(),
    private readonly revoked?: RevokedTokens,
  ) {
    this.key = config.jwksUrl ? remoteKeys(new URL(config.jwksUrl)) : secret;
    this.algorithms = config.jwksUrl ? ASYMMETRIC : ['HS256'];
  }

  /** The principal the token asserts; the tenant comes from here only. */
  async verify(token: string): Promise<Principal> {
    const payload = await this.claims(token);
    const parsed = Principal.safeParse({ ...payload, sub: payload.sub });
    if (!parsed.success) throw new Unauthenticated(invalidClaims(parsed.error.issues), 'AUTH.TOKEN_INVALID');
    // The tenant's policy is read only for a role that is not built in.
    const unknown = unknownRoles(parsed.data.roles);
    if (unknown.length > 0 && unknownRoles(unknown, await this.policyOf(parsed.data.tenant)).length > 0)
      throw new Unauthenticated('the token names a role that is neither built in nor named by the tenant policy', 'AUTH.UNKNOWN_ROLE');
    if (typeof payload.jti === 'string' && payload.jti.length > 0) {
      if (this.revoked?.isRevoked(parsed.data.tenant, payload.jti, Math.floor(this.clock().getTime() / 1000)))
        throw new Unauthenticated('the token has been revoked', 'AUTH.TOKEN_REVOKED');
    } else if (this.config.requireJti) {
      throw new Unauthenticated('the token has no id (jti), which this server requires (ELMA_TOKEN_REQUIRE_JTI)', 'AUTH.TOKEN_ID_REQUIRED');
    }
    return parsed.data;
  }

  private async claims(token: string): Promise<JWTPayload> {
    const { issuer, audience, clockSkewSeconds: skew, maxTtlSeconds } = this.config;
    const now = Math.floor(this.clock().getTime() / 1000);
    let payload: JWTPayload;
    try {
      const options = {
        issuer,
        audience,
        algorithms: this.algorithms,
        clockTolerance: skew,
        currentDate: this.clock(),
        requiredClaims: ['exp'],
      };
      const verified =
        typeof this.key === 'function' ? await jwtVerify(token, this.key, options) : await jwtVerify(token, this.key, options);
      payload = verified.payload;
    } catch (error) {
      throw refusal(error, this.config.jwksUrl !== undefined);
    }
    const { exp, iat } = payload as { exp: number; iat?: number };
    if (iat !== undefined && iat > now + skew) throw new Unauthenticated('the token was issued in the future', 'AUTH.TOKEN_NOT_YET_VALID');
    if (exp - (iat ?? now) > maxTtlSeconds) {
      throw new Unauthenticated(
        `the token lives longer than the ${maxTtlSeconds} s allowed (ELMA_TOKEN_MAX_TTL)`,
        'AUTH.TOKEN_LIFETIME_TOO_LONG',
      );
    }
    return payload;
  }
}

/**
 * Which claims of a verified token are not usable, by name, and for the tenant the name rule an issuer has to
 * follow (a tenant name is not personal, but the claim's value is still not echoed: the rule is what helps).
 */
function invalidClaims(issues: readonly { path: readonly PropertyKey[] }[]): string {
  const claims = [...new Set(issues.map((issue) => String(issue.path[0] ?? 'claims')))];
  const rule = claims.includes('tenant') ? `; ${TENANT_ID_RULE}` : '';
  return `the token's ${claims.join(', ')} claim${claims.length > 1 ? 's are' : ' is'} missing or not valid${rule}`;
}

/**
 * The provider's keys, fetched and cached by jose (refetched for an unknown
 * `kid`). A failure to fetch them is the server's problem, not the token's.
 */
function remoteKeys(url: URL): JWTVerifyGetKey {
  const keys = createRemoteJWKSet(url);
  return async (header, token) => {
    try {
      return await keys(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
      throw new KeysUnavailable();
    }
  };
}

/**
 * A jose failure as a refusal with a stable code, saying which check failed and nothing of the token (nor of
 * the key: a wrong signature says whose key was expected, never a key id or a byte of it).
 */
function refusal(error: unknown, fromProvider: boolean): DomainError {
  if (error instanceof errors.JWTExpired) return new Unauthenticated('the token has expired', 'AUTH.TOKEN_EXPIRED');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'exp' && error.reason === 'missing')
      return new Unauthenticated('the token has no expiry (exp)', 'AUTH.TOKEN_EXPIRY_REQUIRED');
    if (error.claim === 'nbf') return new Unauthenticated('the token is not valid yet (nbf)', 'AUTH.TOKEN_NOT_YET_VALID');
    if (error.claim === 'iss') return new Unauthenticated('the token has the wrong issuer', 'AUTH.TOKEN_INVALID');
    if (error.claim === 'aud') return new Unauthenticated('the token is for another audience', 'AUTH.TOKEN_INVALID');
    return new Unauthenticated('the token has an invalid claim', 'AUTH.TOKEN_INVALID');
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new Unauthenticated('the token is signed with an algorithm not accepted here', 'AUTH.TOKEN_INVALID');
  if (error instanceof KeysUnavailable) return error;
  // The usual cause with the shared secret: a token minted by `elma token` on another data folder (each folder
  // has its own jwt.secret), e.g. without the ELMA_DATA_DIR the server was started with.
  if (error instanceof errors.JWSSignatureVerificationFailed || error instanceof errors.JWKSNoMatchingKey) {
    return new Unauthenticated(
      fromProvider
        ? 'the token is not signed by a key of the identity provider (ELMA_JWKS_URL)'
        : "the token is not signed by this ELMA's key (minted for another data folder?)",
      'AUTH.TOKEN_INVALID',
    );
  }
  return new Unauthenticated('the token is invalid', 'AUTH.TOKEN_INVALID');
}
