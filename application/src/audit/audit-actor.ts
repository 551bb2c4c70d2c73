import { BUILT_IN_ROLES, SUBJECT_PSEUDONYM, SYSTEM_ROLE, type KeyVault, type Principal } from '@elma/domain';

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
 * services, a caller ELMA holds nothing on) by their `sub`. Creates a pseudonym only when asked to (see
 * `actsAsSubject`), and is asked for every caller alike: the answer goes into the record only, never into what
 * the caller is told. Not the audit trail's keyed subject fingerprint (`sfp_`): that key outlives the subject
 * by design.
 */
export async function recordedName(
  vault: Pick<KeyVault, 'subjectPseudonyms'>,
  tenant: string,
  sub: string,
  options: { create?: boolean } = {},
): Promise<string> {
  return (await vault.subjectPseudonyms(tenant, [sub], { create: options.create ?? false })).get(sub) ?? sub;
}

const STAFF_ROLES: ReadonlySet<string> = new Set(BUILT_IN_ROLES);

/**
 * Whether a caller's token is a data subject's own: one that carries none of ELMA's built-in roles (staff and
 * services act with at least one: `agent`, `service`, `dpo`, `admin`, …). Such a caller is named by a subject
 * pseudonym created when needed, so that their first actions, before any event about them arrived, are not
 * recorded under their id for good. A subject given a token with a built-in role (e.g. `agent`) cannot be told
 * from a service until ELMA holds a pseudonym for them (the README's audit section says so).
 */
export function actsAsSubject(caller: AuditCaller): boolean {
  return !caller.roles.some((role) => STAFF_ROLES.has(role));
}

/** The actor and roles an entry records; without a vault (tests of other parts) a caller keeps their `sub`. */
export async function recordedActor(
  vault: Pick<KeyVault, 'subjectPseudonyms'> | undefined,
  tenant: string,
  actor: AuditActor,
): Promise<{ actor: string; actorRoles: string[] }> {
  if (typeof actor === 'string') return { actor, actorRoles: [SYSTEM_ROLE] };
  // Already a pseudonym (a former subject named as their certificate names them): recorded as it is, never pseudonymised again.
  if (SUBJECT_PSEUDONYM.test(actor.sub)) return { actor: actor.sub, actorRoles: [...actor.roles] };
  const name = vault ? await recordedName(vault, tenant, actor.sub, { create: actsAsSubject(actor) }) : actor.sub;
  return { actor: name, actorRoles: [...actor.roles] };
}
