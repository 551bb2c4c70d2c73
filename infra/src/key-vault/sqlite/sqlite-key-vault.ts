import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { ownerOnlyDatabaseFile } from '../../runtime/owner-only';
import { DomainError, KeyShredded, TenantDestroyed, type KeyVault } from '@elma/domain';
import { deriveTenantKey, unwrapKey, wrapKey } from '../../crypto/envelope';
import { Lru } from '../lru';
import { openKeyVaultDatabase } from './schema';

const KEY_BYTES = 32;
const SALT_BYTES = 32;

export interface SqliteKeyVaultOptions {
  path: string;
  /** At least 32 bytes. Only derived tenant keys ever touch the data keys. */
  masterKey: Uint8Array;
  /** Unwrapped data keys kept in memory. Default 50,000. */
  cacheSize?: number;
}

/**
 * Data keys live wrapped in their own SQLite file. Unwrapped keys are cached
 * per process; `shred` and `destroyTenant` evict them here and bump a
 * generation counter that makes other processes drop their caches on their
 * next call. Returned keys are shared with the cache: callers must not mutate them.
 */
export class SqliteKeyVault implements KeyVault {
  private readonly db: Database.Database;
  private readonly masterKey: Uint8Array;
  private readonly dataKeyCache: Lru<string, Uint8Array>;
  private readonly tenantKeyCache = new Lru<string, Uint8Array>(10_000);
  private generation: number;
  private readonly statements;
  private readonly loadTransaction;
  private readonly shredTransaction;
  private readonly destroyTransaction;

  constructor(options: SqliteKeyVaultOptions) {
    if (options.masterKey.length < KEY_BYTES) throw new RangeError(`master key must be at least ${KEY_BYTES} bytes`);
    this.masterKey = new Uint8Array(options.masterKey);
    this.dataKeyCache = new Lru(options.cacheSize ?? 50_000);
    ownerOnlyDatabaseFile(options.path);
    this.db = new Database(options.path, { timeout: 5_000 });
    openKeyVaultDatabase(this.db);
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      generation: prepare('SELECT value FROM generation WHERE id = 0').pluck(),
      bumpGeneration: prepare('UPDATE generation SET value = value + 1 WHERE id = 0 RETURNING value').pluck(),
      isDestroyed: prepare('SELECT 1 FROM destroyed_tenants WHERE tenant = ?').pluck(),
      salt: prepare('SELECT salt FROM tenants WHERE tenant = ?').pluck(),
      insertTenant: prepare('INSERT INTO tenants (tenant, salt) VALUES (?, ?)'),
      isShredded: prepare('SELECT 1 FROM shredded WHERE tenant = ? AND record_id = ?').pluck(),
      wrapped: prepare('SELECT wrapped FROM data_keys WHERE tenant = ? AND record_id = ?').pluck(),
      insertKey: prepare('INSERT INTO data_keys (tenant, record_id, wrapped) VALUES (?, ?, ?)'),
      deleteKey: prepare('DELETE FROM data_keys WHERE tenant = ? AND record_id = ?'),
      markShredded: prepare('INSERT OR IGNORE INTO shredded (tenant, record_id) VALUES (?, ?)'),
      deleteTenantKeys: prepare('DELETE FROM data_keys WHERE tenant = ?'),
      deleteTenantShredded: prepare('DELETE FROM shredded WHERE tenant = ?'),
      deleteTenant: prepare('DELETE FROM tenants WHERE tenant = ?'),
      markDestroyed: prepare('INSERT OR IGNORE INTO destroyed_tenants (tenant) VALUES (?)'),
    };
    this.generation = this.statements.generation.get() as number;
    this.loadTransaction = this.db.transaction((tenant: string, recordIds: string[], create: boolean) =>
      this.load(tenant, recordIds, create),
    );
    this.shredTransaction = this.db.transaction((tenant: string, recordIds: string[]) => {
      if (this.statements.isDestroyed.get(tenant)) return;
      for (const recordId of recordIds) {
        this.statements.deleteKey.run(tenant, recordId);
        this.statements.markShredded.run(tenant, recordId);
      }
      this.bumpGeneration();
    });
    this.destroyTransaction = this.db.transaction((tenant: string) => {
      this.statements.deleteTenantKeys.run(tenant);
      this.statements.deleteTenantShredded.run(tenant);
      this.statements.deleteTenant.run(tenant);
      this.statements.markDestroyed.run(tenant);
      this.bumpGeneration();
    });
  }

  async dataKeys(tenant: string, recordIds: string[], options: { create: boolean }): Promise<Map<string, Uint8Array>> {
    this.dropCachesIfOthersShredded();
    const misses = recordIds.filter((id) => !this.dataKeyCache.get(cacheKey(tenant, id)));
    if (misses.length > 0) {
      const unique = [...new Set(misses)];
      const loaded = options.create
        ? this.loadTransaction.immediate(tenant, unique, true)
        : this.loadTransaction.deferred(tenant, unique, false);
      for (const [id, key] of loaded) this.dataKeyCache.set(cacheKey(tenant, id), key);
    }
    return new Map(recordIds.map((id) => [id, this.dataKeyCache.get(cacheKey(tenant, id)) ?? this.lost(tenant, id)]));
  }

  async shred(tenant: string, recordIds: string[]): Promise<void> {
    if (recordIds.length === 0) return;
    this.shredTransaction.immediate(tenant, recordIds);
    for (const id of recordIds) this.dataKeyCache.delete(cacheKey(tenant, id));
    await this.truncateWal();
  }

  async shreddedAmong(tenant: string, recordIds: string[]): Promise<Set<string>> {
    if (this.statements.isDestroyed.get(tenant)) return new Set(recordIds);
    return new Set(recordIds.filter((id) => this.statements.isShredded.get(tenant, id)));
  }

  async isShredded(tenant: string, recordId: string): Promise<boolean> {
    // A destroyed tenant's keys are all gone, so each of its records counts as shredded.
    return Boolean(this.statements.isDestroyed.get(tenant) || this.statements.isShredded.get(tenant, recordId));
  }

  async destroyTenant(tenant: string): Promise<void> {
    this.destroyTransaction.immediate(tenant);
    const prefix = cacheKey(tenant, '');
    this.dataKeyCache.deleteWhere((key) => key.startsWith(prefix));
    this.tenantKeyCache.delete(tenant);
    await this.truncateWal();
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    this.dataKeyCache.clear();
    this.tenantKeyCache.clear();
    this.masterKey.fill(0);
    this.db.close();
  }

  /** Runs inside one transaction: either every missing key is created or none. */
  private load(tenant: string, recordIds: string[], create: boolean): Map<string, Uint8Array> {
    if (this.statements.isDestroyed.get(tenant)) throw new TenantDestroyed(tenant);
    for (const recordId of recordIds) {
      if (this.statements.isShredded.get(tenant, recordId)) throw new KeyShredded(recordId);
    }
    let salt = this.statements.salt.get(tenant) as Buffer | undefined;
    if (!salt) {
      if (!create) throw keyNotFound(tenant, recordIds);
      salt = randomBytes(SALT_BYTES);
      this.statements.insertTenant.run(tenant, salt);
    }
    const tenantKey = this.tenantKey(tenant, salt);
    const keys = new Map<string, Uint8Array>();
    const missing: string[] = [];
    for (const recordId of recordIds) {
      const wrapped = this.statements.wrapped.get(tenant, recordId) as Buffer | undefined;
      if (wrapped) keys.set(recordId, unwrapKey(tenantKey, wrapped, { tenant, recordId }));
      else missing.push(recordId);
    }
    if (missing.length > 0 && !create) throw keyNotFound(tenant, missing);
    const fresh = randomBytes(KEY_BYTES * missing.length);
    missing.forEach((recordId, i) => {
      const dataKey = new Uint8Array(fresh.subarray(i * KEY_BYTES, (i + 1) * KEY_BYTES));
      this.statements.insertKey.run(tenant, recordId, wrapKey(tenantKey, dataKey, { tenant, recordId }));
      keys.set(recordId, dataKey);
    });
    fresh.fill(0);
    return keys;
  }

  private tenantKey(tenant: string, salt: Uint8Array): Uint8Array {
    let key = this.tenantKeyCache.get(tenant);
    if (!key) {
      key = deriveTenantKey(this.masterKey, salt, tenant);
      this.tenantKeyCache.set(tenant, key);
    }
    return key;
  }

  private bumpGeneration(): void {
    const before = this.statements.generation.get() as number;
    const after = this.statements.bumpGeneration.get() as number;
    // Only adopt the new generation if nobody else shredded since our last look;
    // otherwise leave ours stale so the next call drops the whole cache.
    if (before === this.generation) this.generation = after;
  }

  private dropCachesIfOthersShredded(): void {
    const current = this.statements.generation.get() as number;
    if (current === this.generation) return;
    this.dataKeyCache.clear();
    this.tenantKeyCache.clear();
    this.generation = current;
  }

  /** Unreachable unless the cache is smaller than one batch: then reload the key directly. */
  private lost(tenant: string, recordId: string): Uint8Array {
    const [key] = this.loadTransaction.deferred(tenant, [recordId], false).values();
    return key;
  }

  /** Shredded keys were zeroed in the database pages; truncating the WAL removes the older frames too. */
  private async truncateWal(): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      if (!result || result.busy === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

function cacheKey(tenant: string, recordId: string): string {
  return `${tenant}\u0000${recordId}`;
}

function keyNotFound(tenant: string, recordIds: string[]): DomainError {
  return new DomainError('KEY_VAULT.KEY_NOT_FOUND', `no data key for ${recordIds.length} record(s) of tenant ${tenant}`, {
    tenant,
    recordIds: recordIds.slice(0, 20),
  });
}
