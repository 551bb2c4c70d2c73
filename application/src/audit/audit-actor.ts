import { SYSTEM_ROLE, type KeyVault, type Principal } from '@elma/domain';

/** A caller of the API as an audit entry takes it: a token's principal, or the requester a request stream keeps. */
export type AuditCaller = Pick<Principal, 'sub' | 'roles'>;

/**
 * Who acted, as `AuditLog.record` is told: a caller, or ELMA itself by a fixed name (`system:retention`,
 * `elma-offboarding`), recorded with the role `system`.
 */
export type AuditActor = string | AuditCaller;

/**
 * The name a caller goes by in what outlives an erasure (audit entries, the requester on an erasure
 * certificate): a data subject of the tenant, one the key vault holds a pseudonym for, by that random
 * pseudonym, which their erasure forgets, so that nothing left leads back to them; anyone else (staff,
 * services, a caller ELMA holds nothing on) by their `sub`. Never creates a pseudonym, and is asked for every
 * caller alike: the answer goes into the record only, never into what the caller is told. Not the audit
 * trail's keyed subject fingerprint (`sfp_`): that key outlives the subject by design.
 */
export async function recordedName(vault: Pick<KeyVault, 'subjectPseudonyms'>, tenant: string, sub: string): Promise<string> {
  return (await vault.subjectPseudonyms(tenant, [sub], { create: false })).get(sub) ?? sub;
}

/** The actor and roles an entry records; without a vault (tests of other parts) a caller keeps their `sub`. */
export async function recordedActor(
  vault: Pick<KeyVault, 'subjectPseudonyms'> | undefined,
  tenant: string,
  actor: AuditActor,
): Promise<{ actor: string; actorRoles: string[] }> {
  if (typeof actor === 'string') return { actor, actorRoles: [SYSTEM_ROLE] };
  return { actor: vault ? await recordedName(vault, tenant, actor.sub) : actor.sub, actorRoles: [...actor.roles] };
}
