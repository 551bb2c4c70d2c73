import { z } from 'zod';
import {
  parseOrThrow,
  ROLES,
  TenantMismatch,
  ValidationFailed,
  type Clock,
  type KeyRotation,
  type Principal,
  type RotationRecord,
  type TenantKeyStatus,
} from '@elma/domain';
import type { AuditLog } from '../audit';
import { AuditedAccess } from '../governance/audited-access';
import { revocationClaims } from './revoked-token';

/** The token deny list as this service uses it (an adapter keeps it where every process sees it). */
export interface TokenDenyList {
  /**
   * Denies the tenant's token `jti` until `expiresAt` (seconds since the epoch), or later when the entry
   * already lasts longer: a revocation never shortens one. Returns when the entry now ends.
   */
  revoke(tenant: string, jti: string, expiresAt: number, now: number): number;
}

/**
 * `POST /v1/tokens/revocations`: the token itself (its `jti`, `exp` and tenant are read from it), or its
 * `jti` with, when known, its `exp` (NumericDate, as in the token). `expiresAt` (ISO 8601) may keep the
 * entry longer, never shorter than the token can be accepted.
 */
export const TokenRevocationRequest = z
  .strictObject({
    token: z.string().min(1).max(16_384).optional(),
    jti: z.string().min(1).max(256).optional(),
    exp: z.number().int().min(0).optional(),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
  })
  .superRefine((request, context) => {
    if ((request.token === undefined) === (request.jti === undefined))
      context.addIssue({ code: 'custom', path: [], message: 'give either the token or its jti' });
    if (request.token !== undefined && request.exp !== undefined)
      context.addIssue({ code: 'custom', path: ['exp'], message: 'exp is read from the token' });
  });
export type TokenRevocationRequest = z.infer<typeof TokenRevocationRequest>;

/** `POST /v1/keys/rotations`: the caller's tenant key (master and signing keys are the operator's: `elma keys rotate`). */
export const KeyRotationRequest = z.strictObject({ scope: z.literal('tenant') });

export interface KeyServiceDeps {
  /** The vault's tenant key rotation; `rotations` (the vault's record of past rotations) where the vault keeps one. */
  rotation: KeyRotation & { rotations?(limit?: number): Promise<RotationRecord[]> };
  denyList: TokenDenyList;
  audit: AuditLog;
  clock: Clock;
  /** ELMA_TOKEN_MAX_TTL plus the clock skew: no token accepted now lives longer than this from now. */
  maxTokenLifetimeSeconds: number;
  /** ELMA_TOKEN_CLOCK_SKEW_SECONDS: a token is still accepted this long after its `exp`. */
  clockSkewSeconds: number;
  /** Rows re-wrapped per transaction, and the pause between two (so a rotation never starves requests). */
  batchSize?: number;
  pauseMs?: number;
  onBackgroundError?: (error: unknown) => void;
}

export interface TenantRotationStatus extends TenantKeyStatus {
  state: 'running' | 'done';
  rotation?: RotationRecord;
}

/**
 * Token revocation and tenant key rotation, each checked against the
 * caller's roles and recorded in the tenant's audit trail (ids and counts,
 * never key material). A tenant key rotation re-wraps in the background, in
 * small batches; it is idempotent, so a rotation cut short by a crash is
 * finished by asking again (or by `elma keys rotate --tenant T`).
 */
export class KeyService {
  private readonly running = new Map<string, Promise<void>>();

  private readonly access: AuditedAccess;

  constructor(private readonly deps: KeyServiceDeps) {
    this.access = new AuditedAccess(deps.audit);
  }

  async revokeToken(principal: Principal, body: unknown, requestId: string): Promise<{ jti: string; expiresAt: string }> {
    await this.access.require(principal, ROLES.administer, 'administer', ['tokens/revocations'], requestId);
    const request = parseOrThrow(TokenRevocationRequest, body);
    const now = Math.floor(this.deps.clock.now().getTime() / 1000);
    const { jti, exp } =
      request.token === undefined ? this.namedToken(request.jti!, request.exp, now) : this.ownToken(principal, request.token);
    const expiresAt = this.deps.denyList.revoke(principal.tenant, jti, this.entryEnd(exp, request.expiresAt, now), now);
    await this.access.record(principal, 'administer', [`token:${jti}`], requestId, 'allow', `role:${ROLES.administer}`);
    return { jti, expiresAt: new Date(expiresAt * 1000).toISOString() };
  }

  /**
   * A token named by its `jti` and, when known, its `exp`. An `exp` already past (beyond the clock skew) cannot
   * be that of a token still accepted: most likely a mistyped one, whose entry would end at once and revoke
   * nothing, so it is refused rather than answered 201. (An `exp` earlier than the real one but still ahead
   * cannot be told apart: hence the README's advice to give the token itself.)
   */
  private namedToken(jti: string, exp: number | undefined, now: number): { jti: string; exp?: number } {
    if (exp !== undefined && exp + this.deps.clockSkewSeconds < now)
      throw new ValidationFailed([
        { path: 'exp', message: 'already past: no token with this exp is accepted any more, so revoking it would deny nothing' },
      ]);
    return { jti, exp };
  }

  /** The claims of a token of the caller's tenant: an entry for another tenant's token would deny nothing. */
  private ownToken(principal: Principal, token: string): { jti: string; exp?: number } {
    const claims = revocationClaims(token);
    if (claims.tenant !== principal.tenant) throw new TenantMismatch();
    return claims;
  }

  /**
   * When a deny-list entry may end: not before the token stops being accepted (its `exp` plus the clock skew
   * the verifier allows), nor, when its `exp` is not known, before the longest-lived token accepted now
   * expires. `expiresAt` may only lengthen that; nothing lasts past the longest lifetime, as no token
   * accepted now can live longer.
   */
  private entryEnd(exp: number | undefined, expiresAt: string | undefined, now: number): number {
    const latest = now + this.deps.maxTokenLifetimeSeconds;
    const accepted = exp === undefined ? latest : exp + this.deps.clockSkewSeconds;
    const asked = expiresAt === undefined ? 0 : Math.ceil(Date.parse(expiresAt) / 1000);
    return Math.max(now, Math.min(latest, Math.max(accepted, asked)));
  }

  /** Starts (or resumes) the rotation of the caller's tenant key; the re-wrapping goes on in the background. */
  async rotateTenantKey(principal: Principal, body: unknown, requestId: string): Promise<TenantRotationStatus> {
    await this.access.require(principal, ROLES.keys, 'administer', ['keys/rotations'], requestId);
    parseOrThrow(KeyRotationRequest, body);
    const tenant = principal.tenant;
    const status = await this.deps.rotation.beginTenantRotation(tenant);
    await this.access.record(principal, 'administer', [`tenant-key:v${status.current ?? 0}`], requestId, 'allow', 'keys.rotate-tenant');
    this.runInBackground(tenant);
    return this.statusOf(tenant);
  }

  async rotationStatus(principal: Principal, requestId: string): Promise<TenantRotationStatus> {
    await this.access.require(principal, ROLES.keys, 'read', ['keys/rotations'], requestId);
    return this.statusOf(principal.tenant);
  }

  /** Re-wraps the tenant's rows until none is left under a retiring version (awaitable; used by the CLI and tests). */
  async finishTenantRotation(tenant: string, onBatch?: (status: TenantKeyStatus) => void): Promise<TenantKeyStatus> {
    const batchSize = this.deps.batchSize ?? 500;
    for (;;) {
      const { rewrapped, status } = await this.deps.rotation.rewrapTenant(tenant, batchSize);
      onBatch?.(status);
      if (rewrapped < batchSize && status.retiring.length === 0) return status;
      if (this.deps.pauseMs) await new Promise((resolve) => setTimeout(resolve, this.deps.pauseMs));
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Waits for this process's background rotations (tests; shutdown). */
  async settled(): Promise<void> {
    await Promise.all(this.running.values());
  }

  private runInBackground(tenant: string): void {
    if (this.running.has(tenant)) return;
    const work = this.finishTenantRotation(tenant)
      .then(() => undefined)
      .catch((error: unknown) => this.deps.onBackgroundError?.(error))
      .finally(() => this.running.delete(tenant));
    this.running.set(tenant, work);
  }

  private async statusOf(tenant: string): Promise<TenantRotationStatus> {
    const status = await this.deps.rotation.tenantKeyStatus(tenant);
    const rotation = (await this.deps.rotation.rotations?.(50))?.find((r) => r.kind === 'tenant' && r.tenant === tenant);
    return {
      ...status,
      state: status.retiring.length > 0 ? 'running' : 'done',
      ...(rotation ? { rotation } : {}),
    };
  }
}
