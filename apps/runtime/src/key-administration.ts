import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { AuditLog, KeyService, type TokenRevocationRequest } from '@elma/application';
import { parseOrThrow, Principal, ROLES, type EventLog, type TenantKeyStatus } from '@elma/domain';
import { ConfigError, SqliteKeyVault, SqliteTokenRevocations, type ElmaConfig } from '@elma/infra';
import { openEventLog, systemClock } from './elma';

/** Who the operator's commands are recorded as in the audit trail. */
export const OPERATOR = 'elma-cli';

/**
 * What `elma keys` and `elma token revoke` need, opened beside a running ELMA
 * (every engine here is safe to share between processes): the key vault, the
 * token deny list, and the event log for audit entries. No index, no model.
 */
export class KeyAdministration {
  readonly keys: KeyService;
  private readonly audit: AuditLog;
  private readonly batchSize: number;
  private readonly pauseMs: number;

  private constructor(
    readonly vault: SqliteKeyVault,
    readonly revocations: SqliteTokenRevocations,
    private readonly log: EventLog,
    readonly config: ElmaConfig,
    pacing: { batchSize?: number; pauseMs?: number },
  ) {
    this.batchSize = pacing.batchSize ?? 500;
    this.pauseMs = pacing.pauseMs ?? 0;
    this.audit = new AuditLog({ log, clock: systemClock });
    this.keys = new KeyService({
      rotation: vault,
      denyList: revocations,
      audit: this.audit,
      clock: systemClock,
      maxTokenLifetimeSeconds: config.auth.maxTtlSeconds + config.auth.clockSkewSeconds,
      clockSkewSeconds: config.auth.clockSkewSeconds,
      ...pacing,
    });
  }

  static async open(config: ElmaConfig, pacing: { batchSize?: number; pauseMs?: number } = {}): Promise<KeyAdministration> {
    // With the tenant keys in a KMS, their rotation is the KMS's (transit `rotate`, `POST /v1/keys/rotations`), and
    // there is no keys.db to administer: refuse rather than create an empty SQLite vault beside the KMS's keys.
    if (config.keyVault.kind !== 'sqlite') {
      throw new ConfigError(
        `ELMA_KEY_VAULT=${config.keyVault.kind}: elma keys and elma token revoke work on the embedded SQLite vault only; ` +
          'with a key-management server, use the API: POST /v1/keys/rotations (tenant key), POST /v1/tokens/revocations',
      );
    }
    const vault = new SqliteKeyVault({
      path: join(config.dataDir, 'keys.db'),
      masterKey: config.masterKey,
      previousMasterKeys: config.previousMasterKeys,
    });
    try {
      const revocations = new SqliteTokenRevocations(join(config.dataDir, 'tokens.db'));
      const { log } = await openEventLog(config);
      return new KeyAdministration(vault, revocations, log, config, pacing);
    } catch (error) {
      await vault.close();
      throw error;
    }
  }

  /** Re-wraps every tenant key under ELMA_MASTER_KEY, then retires the master keys nothing uses. */
  async rotateMaster(onBatch: (remaining: number) => void = () => undefined): Promise<{ retired: string[]; current: string }> {
    const batchSize = this.batchSize;
    const retired = new Set<string>();
    for (;;) {
      const result = await this.vault.rewrapUnderCurrentMaster(batchSize);
      for (const id of result.retired) retired.add(id);
      onBatch(result.status.remaining);
      if (result.status.remaining === 0) break;
      await this.pause();
    }
    await this.recordEverywhere(`master-key:${this.vault.masterKeyId}`, 'keys.rotate-master');
    return { retired: [...retired], current: this.vault.masterKeyId };
  }

  /** A new tenant key version, and every data key and pseudonym row re-wrapped under it. */
  async rotateTenant(tenant: string, onBatch: (status: TenantKeyStatus) => void = () => undefined): Promise<TenantKeyStatus> {
    const started = await this.vault.beginTenantRotation(tenant);
    await this.record(tenant, `tenant-key:v${started.current ?? 0}`, 'keys.rotate-tenant');
    return this.keys.finishTenantRotation(tenant, onBatch);
  }

  async rotateSigning(): Promise<{ kid: string; previous: string }> {
    const result = await this.vault.rotateSigningKey();
    await this.recordEverywhere(`signing-key:${result.kid}`, 'keys.rotate-signing');
    return result;
  }

  /** Denies a token of a tenant (the token, or its id and expiry: a TokenRevocationRequest) until it can no longer be accepted. */
  async revokeToken(tenant: string, request: TokenRevocationRequest): Promise<{ jti: string; expiresAt: string }> {
    return this.keys.revokeToken(
      parseOrThrow(Principal, { tenant, sub: OPERATOR, roles: [ROLES.administer] }),
      request,
      `cli-${randomUUID()}`,
    );
  }

  async close(): Promise<void> {
    this.revocations.close();
    await this.vault.close();
    await this.log.close();
  }

  private async pause(): Promise<void> {
    await new Promise((resolve) => (this.pauseMs > 0 ? setTimeout(resolve, this.pauseMs) : setImmediate(resolve)));
  }

  /** Platform-wide rotations are recorded in every tenant's trail: each tenant's keys or certificates changed. */
  private async recordEverywhere(resource: string, rule: string): Promise<void> {
    for (const tenant of await this.vault.tenants()) await this.record(tenant, resource, rule);
  }

  private async record(tenant: string, resource: string, rule: string): Promise<void> {
    await this.audit.record({
      tenant,
      actor: OPERATOR,
      subject: null,
      operation: 'administer',
      resourceIds: [resource],
      decision: { effect: 'allow', rule },
      requestId: `cli-${randomUUID()}`,
    });
  }
}
