import { z } from 'zod';
import { ValidationFailed } from '@elma/domain';

/** The claims a revocation reads from a token: its id, its expiry and the tenant it is bound to. */
const RevocationClaims = z.object({
  jti: z.string().min(1).max(256).optional(),
  exp: z.number().int().min(0).optional(),
  tenant: z.unknown().optional(),
});
export type RevocationClaims = z.infer<typeof RevocationClaims>;

/**
 * The claims of a token given to `POST /v1/tokens/revocations`, decoded, not verified. Verifying would add
 * nothing: the caller is already an admin of the tenant whose deny list the entry goes to, and could name
 * any `jti` of it directly; an entry only ever denies, and its expiry is capped by the longest lifetime a
 * token can have. (A token that does not verify any more, revoked or signed by a retired key, can still be
 * revoked again.) Refusals name the field only, never anything of the token.
 */
export function revocationClaims(token: string): RevocationClaims & { jti: string } {
  const parts = token.split('.');
  let payload: unknown;
  try {
    if (parts.length !== 3) throw new Error('not a compact JWS');
    payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    throw refused('not a JWT (three base64url parts, the middle one a JSON object of claims)');
  }
  const claims = RevocationClaims.safeParse(payload);
  if (!claims.success) throw refused('the token has no valid jti or exp claim');
  const { jti } = claims.data;
  if (jti === undefined) throw refused('the token has no id (jti): it cannot be revoked alone');
  return { ...claims.data, jti };
}

function refused(message: string): ValidationFailed {
  return new ValidationFailed([{ path: 'token', message }]);
}
