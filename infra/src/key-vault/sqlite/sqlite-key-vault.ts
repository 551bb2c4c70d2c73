import { createHmac, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { ownerOnlyDatabaseFile } from '../../files/owner-only';
import { DomainError, KeyShredded, SUBJECT_PSEUDONYM_PREFIX, TenantDestroyed, type KeyVault } from '@elma/domain';
import { deriveTenantKey, openJson, sealJson, unwrapKey, wrapKey, type Sealed } from '@elma/shared';
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
  private readonly pseudonymTransaction;
  private readonly forgetTransaction;

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
      pseudonym: prepare('SELECT pseudonym FROM subject_pseudonyms WHERE tenant = ? AND subject_mac = ?').pluck(),
      subjectOf: prepare('SELECT subject FROM subject_pseudonyms WHERE tenant = ? AND pseudonym = ?').pluck(),
      insertPseudonym: prepare('INSERT INTO subject_pseudonyms (tenant, subject_mac, pseudonym, subject) VALUES (?, ?, ?, ?)'),
      deletePseudonym: prepare('DELETE FROM subject_pseudonyms WHERE tenant = ? AND subject_mac = ?'),
      deleteTenantPseudonyms: prepare('DELETE FROM subject_pseudonyms WHERE tenant = ?'),
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
    this.pseudonymTransaction = this.db.transaction((tenant: string, subjects: string[], create: boolean) =>
      this.loadPseudonyms(tenant, subjects, create),
    );
    this.forgetTransaction = this.db.transaction((tenant: string, subject: string): string | undefined => {
      const salt = this.statements.salt.get(tenant) as Buffer | undefined;
      if (!salt) return undefined;
      const mac = subjectMac(this.tenantKey(tenant, salt), subject);
      const pseudonym = this.statements.pseudonym.get(tenant, mac) as string | undefined;
      this.statements.deletePseudonym.run(tenant, mac);
      return pseudonym;
    });
    this.destroyTransaction = this.db.transaction((tenant: string) => {
      this.statements.deleteTenantPseudonyms.run(tenant);
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

  async subjectPseudonyms(tenant: string, subjects: string[], options: { create: boolean }): Promise<Map<string, string>> {
    const unique = [...new Set(subjects)];
    if (unique.length === 0) return new Map();
    // Known subjects (the common case) are read without the write lock.
    const known = this.pseudonymTransaction.deferred(tenant, unique, false);
    if (!options.create || known.size === unique.length) return known;
    // IMMEDIATE: the look-up and the insert hold the write lock together, so two first writes get one pseudonym.
    return this.pseudonymTransaction.immediate(tenant, unique, true);
  }

  async subjectsOfPseudonyms(tenant: string, pseudonyms: string[]): Promise<Map<string, string>> {
    const subjects = new Map<string, string>();
    if (pseudonyms.length === 0 || this.statements.isDestroyed.get(tenant)) return subjects;
    const salt = this.statements.salt.get(tenant) as Buffer | undefined;
    if (!salt) return subjects;
    const tenantKey = this.tenantKey(tenant, salt);
    for (const pseudonym of new Set(pseudonyms)) {
      const sealed = this.statements.subjectOf.get(tenant, pseudonym) as Buffer | undefined;
      if (sealed)
        subjects.set(
          pseudonym,
          openJson<string>(tenantKey, JSON.parse(sealed.toString('utf8')) as Sealed, pseudonymAad(tenant, pseudonym)),
        );
    }
    return subjects;
  }

  async forgetSubject(tenant: string, subject: string): Promise<string | undefined> {
    const pseudonym = this.forgetTransaction.immediate(tenant, subject);
    if (pseudonym !== undefined) await this.truncateWal();
    return pseudonym;
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

  /** Runs inside one transaction: either every missing pseudonym is created or none. */
  private loadPseudonyms(tenant: string, subjects: string[], create: boolean): Map<string, string> {
    const pseudonyms = new Map<string, string>();
    if (this.statements.isDestroyed.get(tenant)) {
      if (create) throw new TenantDestroyed(tenant);
      return pseudonyms;
    }
    let salt = this.statements.salt.get(tenant) as Buffer | undefined;
    if (!salt) {
      if (!create) return pseudonyms;
      salt = randomBytes(SALT_BYTES);
      this.statements.insertTenant.run(tenant, salt);
    }
    const tenantKey = this.tenantKey(tenant, salt);
    for (const subject of subjects) {
      const mac = subjectMac(tenantKey, subject);
      let pseudonym = this.statements.pseudonym.get(tenant, mac) as string | undefined;
      if (!pseudonym && create) {
        pseudonym = `${SUBJECT_PSEUDONYM_PREFIX}${randomBytes(16).toString('hex')}`;
        const sealed = Buffer.from(JSON.stringify(sealJson(tenantKey, subject, pseudonymAad(tenant, pseudonym))), 'utf8');
        this.statements.insertPseudonym.run(tenant, mac, pseudonym, sealed);
      }
      if (pseudonym) pseudonyms.set(subject, pseudonym);
    }
    return pseudonyms;
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

/** Finds a subject's row without storing the id: a MAC under the tenant key. */
function subjectMac(tenantKey: Uint8Array, subject: string): Buffer {
  return createHmac('sha256', tenantKey).update('elma/subject-pseudonym/v1\u0000', 'utf8').update(subject, 'utf8').digest();
}

function pseudonymAad(tenant: string, pseudonym: string): string {
  return `elma/subject/v1\u0000${tenant}\u0000${pseudonym}`;
}

function keyNotFound(tenant: string, recordIds: string[]): DomainError {
  return new DomainError('KEY_VAULT.KEY_NOT_FOUND', `no data key for ${recordIds.length} record(s) of tenant ${tenant}`, {
    tenant,
    recordIds: recordIds.slice(0, 20),
  });
}
