import { z } from 'zod';
import { Purpose, Sensitivity } from '../memory/record';

/**
 * The tenant-name rule, defined once for tokens, paths and commands. The workflows repeat the pattern
 * (workflows/src/reindex/messages.ts: their sandbox bundle does not load the domain).
 */
export const TENANT_ID_PATTERN = /^[a-z0-9][a-z0-9_]{0,62}$/;
/** The rule in words and as the pattern, for messages that must tell a caller what a valid tenant name is. */
export const TENANT_ID_RULE = `tenant names are 1 to 63 lower-case letters, digits and underscores, not starting with an underscore (${TENANT_ID_PATTERN.source})`;
export const TenantId = z.string().regex(TENANT_ID_PATTERN, TENANT_ID_RULE);

/** Who is calling, as asserted by a verified token. The tenant comes from here only, never from a request body. */
export const Principal = z.object({
  tenant: TenantId,
  sub: z.string().min(1).max(200),
  roles: z.array(z.string().min(1).max(200)).max(50).default([]),
  purposes: z.array(Purpose).default([]),
  clearance: Sensitivity.default('internal'),
  /** ABAC attributes asserted by the token, when the issuer has them. */
  department: z.string().min(1).max(200).optional(),
  project: z.string().min(1).max(200).optional(),
  /**
   * The caller's display name (the standard `name` claim), shown on certificates for the staff who requested or
   * approved an erasure. Optional and forgiving: a name this schema does not take is dropped, never a reason to
   * refuse the token.
   */
  name: z.string().trim().min(1).max(200).optional().catch(undefined),
});
export type Principal = z.infer<typeof Principal>;

/**
 * The roles ELMA itself gives meaning to: the default policy's rules and the
 * role gates of the services (writes, corrections, legal holds, policy,
 * audit export, erasure requests and approvals, tenant off-boarding). A tenant's policy may name
 * more; a role that neither knows is a typo or an invention, never granted
 * silently.
 */
export const BUILT_IN_ROLES = ['agent', 'service', 'admin', 'reviewer', 'auditor', 'compliance', 'dpo', 'legal', 'platform-admin'] as const;

/**
 * The reserved tenant of the platform's operators. A `platform-admin` token
 * names it as its tenant: the role acts on the tenant named in a path
 * (`/v1/tenants/{id}/...`) only when the token is bound to this tenant, so a
 * tenant's own issuer, which can put any role in its tokens, can never make
 * a platform admin. The platform tenant itself cannot be off-boarded.
 */
export const PLATFORM_TENANT = 'elma_platform';
export type BuiltInRole = (typeof BUILT_IN_ROLES)[number];

/** The roles of `roles` that are neither built in nor named by a rule of `policy`. */
export function unknownRoles(roles: readonly string[], policy?: { rules: readonly { when?: { roles?: readonly string[] } }[] }): string[] {
  const known = new Set<string>(BUILT_IN_ROLES);
  for (const rule of policy?.rules ?? []) for (const role of rule.when?.roles ?? []) known.add(role);
  return [...new Set(roles.filter((role) => !known.has(role)))];
}
