import { SignJWT, errors, jwtVerify } from 'jose';
import { DomainError, Principal } from '@elma/domain';

export class Unauthenticated extends DomainError {
  constructor(reason: string) {
    super('AUTH.UNAUTHENTICATED', reason);
  }
}

const ISSUER = 'elma';
const AUDIENCE = 'elma-api';

/** Mints a development token (HS256). Production deployments put an identity provider in front instead. */
export async function mintToken(
  secret: Uint8Array,
  claims: Principal,
  options: { ttlSeconds?: number; now?: Date } = {},
): Promise<string> {
  const principal = Principal.parse(claims);
  const issuedAt = Math.floor((options.now ?? new Date()).getTime() / 1000);
  return new SignJWT({
    tenant: principal.tenant,
    roles: principal.roles,
    purposes: principal.purposes,
    clearance: principal.clearance,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(principal.sub)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + (options.ttlSeconds ?? 8 * 3600))
    .sign(secret);
}

/** Verifies a bearer token and returns the principal it asserts; the tenant comes from here only. */
export async function verifyToken(secret: Uint8Array, token: string): Promise<Principal> {
  try {
    const { payload } = await jwtVerify(token, secret, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] });
    const parsed = Principal.safeParse({ ...payload, sub: payload.sub });
    if (!parsed.success) throw new Unauthenticated('the token lacks valid tenant, sub, roles, purposes or clearance claims');
    return parsed.data;
  } catch (error) {
    if (error instanceof Unauthenticated) throw error;
    if (error instanceof errors.JWTExpired) throw new Unauthenticated('the token has expired');
    throw new Unauthenticated('the token is invalid');
  }
}
