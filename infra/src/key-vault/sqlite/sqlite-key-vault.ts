import { createHmac, createPrivateKey, createPublicKey, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { ownerOnlyDatabaseFile } from '../../files/owner-only';
import {
  DomainError,
  FORMAT_VERSIONS,
  KeyShredded,
  SUBJECT_PSEUDONYM_PREFIX,
  TenantDestroyed,
  type DataKeyOptions,
  type KeyRotation,
  type KeyVault,
  type MasterKeyRotation,
  type MasterKeyStatus,
  type RotationRecord,
  type SigningKeyRotation,
  type TenantKeyStatus,
} from '@elma/domain';
import { deriveTenantKey, IntegrityCheckFailed, openJson, sealJson, unwrapKey, wrapKey, type Sealed } from '@elma/shared';
import { legacySigningSeed, signingKeyId, ed25519PrivateKey, type SigningKeyring } from '../../certificate/signing';
import { Lru } from '../lru';
import { addFormat2Tables, assertReadableFormat, keyVaultFormat, openKeyVaultDatabase, setFormat } from './schema';
import { sharedStatements, shreddedIds } from '../shared-tables';

const KEY_BYTES = 32;

export interface SqliteKeyVaultOptions {
  path: string;
  /** At least 32 bytes (ELMA_MASTER_KEY): everything new is wrapped under it. */
  masterKey: Uint8Array;
  /**
   * Master keys that may still wrap keys in this file (ELMA_MASTER_KEY_PREVIOUS): needed from before a master
   * key rotation starts until it has finished. A key the file needs and nobody supplied stops the open.
   */
  previousMasterKeys?: Uint8Array[];
  /** Unwrapped data keys kept in memory. Default 50,000. */
  cacheSize?: number;
  clock?: () => Date;
}

interface MasterKey {
  id: string;
  key: Uint8Array;
  kek: Uint8Array;
}

interface TenantKeyRow {
  tenant: string;
  version: number;
  master_id: string;
  salt: Buffer | null;
  wrapped: Buffer | null;
  state: 'active' | 'retiring';
}

/**
 * Data keys live wrapped in their own SQLite file, under versioned tenant
 * keys, themselves wrapped under the operator's master key (see schema.ts).
 * Unwrapped keys are cached per process; `shred`, `destroyTenant` and the
 * retirement of a key evict them here and bump a generation counter that
 * makes other processes drop their caches on their next call. A rotation never
 * changes a data key, so a cached data key stays right while its wrapping
 * changes underneath. Returned keys are shared with the cache: callers must not mutate them.
 */
export class SqliteKeyVault implements KeyVault, KeyRotation, MasterKeyRotation, SigningKeyRotation {
  private readonly db: Database.Database;
  private readonly masters = new Map<string, MasterKey>();
  private readonly primary: MasterKey;
  private readonly dataKeyCache: Lru<string, Uint8Array>;
  private readonly tenantKeyCache = new Lru<string, Uint8Array>(10_000);
  private signingCache: SigningKeyring | undefined;
  private readonly clock: () => Date;
  private generation: number;
  private readonly statements;
  private readonly loadTransaction;
  private readonly shredTransaction;
  private readonly destroyTransaction;
  private readonly pseudonymTransaction;
  private readonly forgetTransaction;

  constructor(options: SqliteKeyVaultOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.primary = masterKeyOf(options.masterKey);
    for (const key of [options.masterKey, ...(options.previousMasterKeys ?? [])]) {
      const master = masterKeyOf(key);
      if (!this.masters.has(master.id)) this.masters.set(master.id, master);
    }
    this.dataKeyCache = new Lru(options.cacheSize ?? 50_000);
    ownerOnlyDatabaseFile(options.path);
    this.db = new Database(options.path, { timeout: 5_000 });
    try {
      openKeyVaultDatabase(this.db);
      assertReadableFormat(this.db, options.path);
      if (keyVaultFormat(this.db) < FORMAT_VERSIONS.keyVault) this.db.transaction(() => this.migrateToFormat2()).immediate();
      this.db.prepare("INSERT OR IGNORE INTO master_keys (id, state, added_at) VALUES (?, 'active', ?)").run(this.primary.id, this.now());
      this.assertPrimaryNotRetired();
      this.assertMasterKeysSupplied(options.path);
    } catch (error) {
      this.db.close();
      throw error;
    }
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      ...sharedStatements(this.db),
      isDestroyed: prepare('SELECT 1 FROM destroyed_tenants WHERE tenant = ?').pluck(),
      activeKey: this.db.prepare<[string], TenantKeyRow>("SELECT * FROM tenant_keys WHERE tenant = ? AND state = 'active'"),
      tenantKey: this.db.prepare<[string, number], TenantKeyRow>('SELECT * FROM tenant_keys WHERE tenant = ? AND version = ?'),
      tenantVersions: prepare('SELECT version FROM tenant_keys WHERE tenant = ? ORDER BY version DESC').pluck(),
      insertTenantKey: prepare(
        "INSERT INTO tenant_keys (tenant, version, master_id, salt, wrapped, state, created_at) VALUES (?, ?, ?, NULL, ?, 'active', ?)",
      ),
      wrapped: this.db.prepare<[string, string], { wrapped: Buffer; key_version: number }>(
        'SELECT wrapped, key_version FROM data_keys WHERE tenant = ? AND record_id = ?',
      ),
      insertKey: prepare('INSERT INTO data_keys (tenant, record_id, wrapped, key_version) VALUES (?, ?, ?, ?)'),
      deleteTenant: prepare('DELETE FROM tenant_keys WHERE tenant = ?'),
      markDestroyed: prepare('INSERT OR IGNORE INTO destroyed_tenants (tenant) VALUES (?)'),
      subjectOf: this.db.prepare<[string, string], { subject: Buffer; key_version: number }>(
        'SELECT subject, key_version FROM subject_pseudonyms WHERE tenant = ? AND pseudonym = ?',
      ),
      insertPseudonym: prepare(
        'INSERT INTO subject_pseudonyms (tenant, subject_mac, pseudonym, subject, key_version) VALUES (?, ?, ?, ?, ?)',
      ),
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
      let pseudonym: string | undefined;
      for (const version of this.statements.tenantVersions.all(tenant) as number[]) {
        const mac = subjectMac(this.tenantKeyOf(tenant, version), subject);
        pseudonym ??= this.statements.pseudonym.get(tenant, mac) as string | undefined;
        this.statements.deletePseudonym.run(tenant, mac);
      }
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

  /** The id of ELMA_MASTER_KEY as this file names it (a MAC of the key, not the key). */
  get masterKeyId(): string {
    return this.primary.id;
  }

  async dataKeys(tenant: string, recordIds: string[], options: DataKeyOptions): Promise<Map<string, Uint8Array>> {
    this.dropCachesIfOthersShredded();
    const found = new Map<string, Uint8Array>();
    for (const id of recordIds) {
      const cached = this.dataKeyCache.get(cacheKey(tenant, id));
      if (cached) found.set(id, cached);
    }
    const misses = [...new Set(recordIds.filter((id) => !found.has(id)))];
    if (misses.length > 0) {
      const loaded = options.create
        ? this.loadTransaction.immediate(tenant, misses, true)
        : this.loadTransaction.deferred(tenant, misses, false);
      for (const [id, key] of loaded) {
        if (options.keep !== false) this.dataKeyCache.set(cacheKey(tenant, id), key);
        found.set(id, key);
      }
    }
    return new Map(recordIds.map((id) => [id, found.get(id)!]));
  }

  async shred(tenant: string, recordIds: string[]): Promise<void> {
    if (recordIds.length === 0) return;
    this.shredTransaction.immediate(tenant, recordIds);
    for (const id of recordIds) this.dataKeyCache.delete(cacheKey(tenant, id));
    await this.truncateWal();
  }

  async shreddedAmong(tenant: string, recordIds: string[]): Promise<Set<string>> {
    return shreddedIds(Boolean(this.statements.isDestroyed.get(tenant)), this.statements.isShredded, tenant, recordIds);
  }

  async isShredded(tenant: string, recordId: string): Promise<boolean> {
    return (await this.shreddedAmong(tenant, [recordId])).size > 0;
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
    this.dropCachesIfOthersShredded();
    const read = this.db.transaction(() => {
      for (const pseudonym of new Set(pseudonyms)) {
        const row = this.statements.subjectOf.get(tenant, pseudonym);
        if (!row) continue;
        const key = this.tenantKeyOf(tenant, row.key_version);
        subjects.set(pseudonym, openJson<string>(key, JSON.parse(row.subject.toString('utf8')) as Sealed, pseudonymAad(tenant, pseudonym)));
      }
    });
    read.deferred();
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
    this.tenantKeyCache.deleteWhere((key) => key.startsWith(prefix));
    await this.truncateWal();
  }

  // ---- tenant key rotation -------------------------------------------------------------------

  async beginTenantRotation(tenant: string): Promise<TenantKeyStatus> {
    this.db
      .transaction(() => {
        if (this.statements.isDestroyed.get(tenant)) throw new TenantDestroyed(tenant);
        const versions = this.statements.tenantVersions.all(tenant) as number[];
        const active = this.statements.activeKey.get(tenant);
        // A rotation under way is resumed, not stacked: at most two versions live at once.
        if (versions.length > 1 || !active) return;
        const version = active.version + 1;
        this.assertPrimaryNotRetired();
        this.db.prepare("UPDATE tenant_keys SET state = 'retiring' WHERE tenant = ? AND version = ?").run(tenant, active.version);
        const key = randomBytes(KEY_BYTES);
        this.statements.insertTenantKey.run(
          tenant,
          version,
          this.primary.id,
          this.wrapTenantKey(this.primary, tenant, version, key),
          this.now(),
        );
        this.tenantKeyCache.set(tenantCacheKey(tenant, version), new Uint8Array(key));
        key.fill(0);
        this.db
          .prepare("INSERT INTO rotations (id, kind, tenant, target, state, started_at) VALUES (?, 'tenant', ?, ?, 'running', ?)")
          .run(`rot_${randomUUID()}`, tenant, `v${version}`, this.now());
      })
      .immediate();
    return this.tenantKeyStatus(tenant);
  }

  async rewrapTenant(tenant: string, batchSize: number): Promise<{ rewrapped: number; status: TenantKeyStatus }> {
    this.dropCachesIfOthersShredded();
    const { rewrapped, retired } = this.db.transaction(() => this.rewrapTenantBatch(tenant, Math.max(1, batchSize))).immediate();
    // The retired tenant key was zeroed in the database pages; truncating the WAL removes its older frames too.
    if (retired) await this.truncateWal();
    return { rewrapped, status: await this.tenantKeyStatus(tenant) };
  }

  async tenantKeyStatus(tenant: string): Promise<TenantKeyStatus> {
    const versions = this.statements.tenantVersions.all(tenant) as number[];
    const current = this.statements.activeKey.get(tenant)?.version;
    const retiring = versions.filter((v) => v !== current).sort((a, b) => a - b);
    const remaining =
      current === undefined
        ? 0
        : (this.db
            .prepare(
              'SELECT (SELECT count(*) FROM data_keys WHERE tenant = @tenant AND key_version < @current) + (SELECT count(*) FROM subject_pseudonyms WHERE tenant = @tenant AND key_version < @current)',
            )
            .pluck()
            .get({ tenant, current }) as number);
    return { tenant, current, retiring, remaining };
  }

  /** The tenants with key material here (destroyed ones excluded). */
  async tenants(): Promise<string[]> {
    return this.db.prepare('SELECT DISTINCT tenant FROM tenant_keys ORDER BY tenant').pluck().all() as string[];
  }

  // ---- master key rotation -------------------------------------------------------------------

  async rewrapUnderCurrentMaster(batchSize: number): Promise<{ rewrapped: number; retired: string[]; status: MasterKeyStatus }> {
    const result = this.db.transaction(() => this.rewrapMasterBatch(Math.max(1, batchSize))).immediate();
    if (result.retired.length > 0) await this.truncateWal();
    return { ...result, status: await this.masterKeyStatus() };
  }

  async masterKeyStatus(): Promise<MasterKeyStatus> {
    const keys = this.db.prepare('SELECT id, state FROM master_keys ORDER BY added_at, id').all() as {
      id: string;
      state: 'active' | 'retired';
    }[];
    return {
      current: this.primary.id,
      keys: keys.map((k) => ({ ...k, supplied: this.masters.has(k.id) })),
      remaining: this.underOtherMasters(),
    };
  }

  // ---- certificate signing keys --------------------------------------------------------------

  /** The signing key in use and every key ever used (public halves), for the CertificateSigner and the JWKS. */
  signingKeyring(): SigningKeyring {
    this.dropCachesIfOthersShredded();
    if (this.signingCache) return this.signingCache;
    const rows = this.db.prepare('SELECT kid, x, master_id, seed, state FROM signing_keys ORDER BY version').all() as {
      kid: string;
      x: string;
      master_id: string | null;
      seed: string | null;
      state: 'active' | 'retired';
    }[];
    const active = rows.find((r) => r.state === 'active');
    if (!active?.seed || !active.master_id) throw new DomainError('KEY_VAULT.NO_SIGNING_KEY', 'keys.db holds no active signing key');
    const seed = Buffer.from(
      openJson<string>(this.masterById(active.master_id).kek, JSON.parse(active.seed) as Sealed, signingAad(active.kid)),
      'base64',
    );
    this.signingCache = { active: { kid: active.kid, seed: new Uint8Array(seed) }, published: rows.map(({ kid, x }) => ({ kid, x })) };
    return this.signingCache;
  }

  async rotateSigningKey(): Promise<{ kid: string; previous: string }> {
    const result = this.db
      .transaction(() => {
        this.assertPrimaryNotRetired();
        const previous = this.db.prepare("SELECT kid FROM signing_keys WHERE state = 'active'").pluck().get() as string;
        const version = (this.db.prepare('SELECT max(version) FROM signing_keys').pluck().get() as number) + 1;
        const seed = randomBytes(KEY_BYTES);
        const kid = this.insertSigningKey(version, seed);
        seed.fill(0);
        // The previous key keeps its public half only: old certificates verify, nothing new can be signed with it.
        this.db
          .prepare("UPDATE signing_keys SET state = 'retired', seed = NULL, master_id = NULL, retired_at = ? WHERE kid = ?")
          .run(this.now(), previous);
        this.db
          .prepare(
            "INSERT INTO rotations (id, kind, tenant, target, state, started_at, finished_at) VALUES (?, 'signing', NULL, ?, 'done', ?, ?)",
          )
          .run(`rot_${randomUUID()}`, kid, this.now(), this.now());
        this.bumpGeneration();
        return { kid, previous };
      })
      .immediate();
    this.signingCache = undefined;
    await this.truncateWal();
    return result;
  }

  /**
   * The secret that idempotency fingerprints, event ids and erasure
   * fingerprints derive from. It is the master key the file was made with,
   * kept sealed here so that rotating the master key changes none of them.
   */
  derivationRoot(): Uint8Array {
    const stored = JSON.parse(this.db.prepare("SELECT value FROM meta WHERE key = 'root'").pluck().get() as string) as {
      masterId: string;
      sealed: Sealed;
    };
    return new Uint8Array(Buffer.from(openJson<string>(this.masterById(stored.masterId).kek, stored.sealed, ROOT_AAD), 'base64'));
  }

  async rotations(limit = 20): Promise<RotationRecord[]> {
    const rows = this.db.prepare('SELECT * FROM rotations ORDER BY started_at DESC, id LIMIT ?').all(limit) as {
      id: string;
      kind: RotationRecord['kind'];
      tenant: string | null;
      target: string;
      state: RotationRecord['state'];
      started_at: string;
      finished_at: string | null;
      rewrapped: number;
    }[];
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      tenant: r.tenant,
      target: r.target,
      state: r.state,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
      rewrapped: r.rewrapped,
    }));
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    this.dataKeyCache.clear();
    this.tenantKeyCache.clear();
    this.signingCache = undefined;
    for (const master of this.masters.values()) {
      master.key.fill(0);
      master.kek.fill(0);
    }
    this.db.close();
  }

  /** Runs inside one transaction: either every missing key is created or none. */
  private load(tenant: string, recordIds: string[], create: boolean): Map<string, Uint8Array> {
    if (this.statements.isDestroyed.get(tenant)) throw new TenantDestroyed(tenant);
    for (const recordId of recordIds) {
      if (this.statements.isShredded.get(tenant, recordId)) throw new KeyShredded(recordId);
    }
    let active = this.statements.activeKey.get(tenant);
    if (!active) {
      if (!create) throw keyNotFound(tenant, recordIds);
      active = this.createTenant(tenant);
    }
    const keys = new Map<string, Uint8Array>();
    const missing: string[] = [];
    for (const recordId of recordIds) {
      const row = this.statements.wrapped.get(tenant, recordId);
      if (row) keys.set(recordId, unwrapKey(this.tenantKeyOf(tenant, row.key_version), row.wrapped, { tenant, recordId }));
      else missing.push(recordId);
    }
    if (missing.length > 0 && !create) throw keyNotFound(tenant, missing);
    const tenantKey = this.tenantKeyOf(tenant, active.version);
    const fresh = randomBytes(KEY_BYTES * missing.length);
    missing.forEach((recordId, i) => {
      const dataKey = new Uint8Array(fresh.subarray(i * KEY_BYTES, (i + 1) * KEY_BYTES));
      this.statements.insertKey.run(tenant, recordId, wrapKey(tenantKey, dataKey, { tenant, recordId }), active.version);
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
    let active = this.statements.activeKey.get(tenant);
    if (!active) {
      if (!create) return pseudonyms;
      active = this.createTenant(tenant);
    }
    // During a rotation a subject's row is under the new or the old version: look under each.
    const versions = this.statements.tenantVersions.all(tenant) as number[];
    for (const subject of subjects) {
      let pseudonym: string | undefined;
      for (const version of versions) {
        pseudonym = this.statements.pseudonym.get(tenant, subjectMac(this.tenantKeyOf(tenant, version), subject)) as string | undefined;
        if (pseudonym) break;
      }
      if (!pseudonym && create) {
        pseudonym = `${SUBJECT_PSEUDONYM_PREFIX}${randomBytes(16).toString('hex')}`;
        this.insertPseudonym(tenant, active.version, subject, pseudonym);
      }
      if (pseudonym) pseudonyms.set(subject, pseudonym);
    }
    return pseudonyms;
  }

  private insertPseudonym(tenant: string, version: number, subject: string, pseudonym: string): void {
    const tenantKey = this.tenantKeyOf(tenant, version);
    const sealed = Buffer.from(JSON.stringify(sealJson(tenantKey, subject, pseudonymAad(tenant, pseudonym))), 'utf8');
    this.statements.insertPseudonym.run(tenant, subjectMac(tenantKey, subject), pseudonym, sealed, version);
  }

  /** A new tenant's key: random, wrapped under the current master key. */
  private createTenant(tenant: string): TenantKeyRow {
    this.assertPrimaryNotRetired();
    const key = randomBytes(KEY_BYTES);
    this.statements.insertTenantKey.run(tenant, 1, this.primary.id, this.wrapTenantKey(this.primary, tenant, 1, key), this.now());
    this.tenantKeyCache.set(tenantCacheKey(tenant, 1), new Uint8Array(key));
    key.fill(0);
    return this.statements.activeKey.get(tenant)!;
  }

  private tenantKeyOf(tenant: string, version: number): Uint8Array {
    const cached = this.tenantKeyCache.get(tenantCacheKey(tenant, version));
    if (cached) return cached;
    const row = this.statements.tenantKey.get(tenant, version);
    if (!row) throw new IntegrityCheckFailed('tenant key version');
    const key = this.tenantKeyMaterial(row);
    this.tenantKeyCache.set(tenantCacheKey(tenant, version), key);
    return key;
  }

  private tenantKeyMaterial(row: TenantKeyRow): Uint8Array {
    const master = this.masterById(row.master_id);
    // Format 1: derived from the master key and the tenant's salt, until the first master key rotation wraps it.
    if (row.salt) return deriveTenantKey(master.key, row.salt, row.tenant);
    return unwrapKey(master.kek, row.wrapped!, tenantKeyContext(row.tenant, row.version));
  }

  private wrapTenantKey(master: MasterKey, tenant: string, version: number, key: Uint8Array): Buffer {
    return Buffer.from(wrapKey(master.kek, key, tenantKeyContext(tenant, version)));
  }

  private masterById(id: string): MasterKey {
    const master = this.masters.get(id);
    if (!master) throw missingMasterKey([id]);
    return master;
  }

  /** One batch of a tenant key rotation, inside one IMMEDIATE transaction. */
  private rewrapTenantBatch(tenant: string, batchSize: number): { rewrapped: number; retired: boolean } {
    if (this.statements.isDestroyed.get(tenant)) throw new TenantDestroyed(tenant);
    const active = this.statements.activeKey.get(tenant);
    if (!active) return { rewrapped: 0, retired: false };
    const target = this.tenantKeyOf(tenant, active.version);
    const keys = this.db
      .prepare('SELECT record_id, wrapped, key_version FROM data_keys WHERE tenant = ? AND key_version < ? LIMIT ?')
      .all(tenant, active.version, batchSize) as { record_id: string; wrapped: Buffer; key_version: number }[];
    const update = this.db.prepare('UPDATE data_keys SET wrapped = ?, key_version = ? WHERE tenant = ? AND record_id = ?');
    for (const row of keys) {
      const context = { tenant, recordId: row.record_id };
      const dataKey = unwrapKey(this.tenantKeyOf(tenant, row.key_version), row.wrapped, context);
      update.run(wrapKey(target, dataKey, context), active.version, tenant, row.record_id);
      dataKey.fill(0);
    }
    const rows = this.db
      .prepare('SELECT subject_mac, pseudonym, subject, key_version FROM subject_pseudonyms WHERE tenant = ? AND key_version < ? LIMIT ?')
      .all(tenant, active.version, batchSize - keys.length) as {
      subject_mac: Buffer;
      pseudonym: string;
      subject: Buffer;
      key_version: number;
    }[];
    for (const row of rows) {
      const old = this.tenantKeyOf(tenant, row.key_version);
      const subject = openJson<string>(old, JSON.parse(row.subject.toString('utf8')) as Sealed, pseudonymAad(tenant, row.pseudonym));
      this.statements.deletePseudonym.run(tenant, row.subject_mac);
      this.insertPseudonym(tenant, active.version, subject, row.pseudonym);
    }
    const rewrapped = keys.length + rows.length;
    let retired = 0;
    if (rewrapped > 0) {
      this.db
        .prepare("UPDATE rotations SET rewrapped = rewrapped + ? WHERE kind = 'tenant' AND tenant = ? AND state = 'running'")
        .run(rewrapped, tenant);
    }
    if (rewrapped < batchSize) {
      // Nothing is wrapped under a retiring version any more: destroy it.
      retired = this.db.prepare("DELETE FROM tenant_keys WHERE tenant = ? AND state = 'retiring'").run(tenant).changes;
      this.db
        .prepare("UPDATE rotations SET state = 'done', finished_at = ? WHERE kind = 'tenant' AND tenant = ? AND state = 'running'")
        .run(this.now(), tenant);
      if (retired > 0) {
        this.tenantKeyCache.deleteWhere((key) => key.startsWith(cacheKey(tenant, '')) && key !== tenantCacheKey(tenant, active.version));
        this.bumpGeneration();
      }
    }
    return { rewrapped, retired: retired > 0 };
  }

  /** One batch of a master key rotation, inside one IMMEDIATE transaction. */
  private rewrapMasterBatch(batchSize: number): { rewrapped: number; retired: string[] } {
    const primary = this.primary;
    if (!this.db.prepare("SELECT 1 FROM rotations WHERE kind = 'master' AND state = 'running'").get() && this.underOtherMasters() > 0) {
      this.db
        .prepare("INSERT INTO rotations (id, kind, tenant, target, state, started_at) VALUES (?, 'master', NULL, ?, 'running', ?)")
        .run(`rot_${randomUUID()}`, primary.id, this.now());
    }
    let rewrapped = 0;
    const rows = this.db.prepare('SELECT * FROM tenant_keys WHERE master_id <> ? LIMIT ?').all(primary.id, batchSize) as TenantKeyRow[];
    const update = this.db.prepare('UPDATE tenant_keys SET master_id = ?, salt = NULL, wrapped = ? WHERE tenant = ? AND version = ?');
    for (const row of rows) {
      const key = this.tenantKeyMaterial(row);
      update.run(primary.id, this.wrapTenantKey(primary, row.tenant, row.version, key), row.tenant, row.version);
      rewrapped++;
    }
    if (rewrapped < batchSize) {
      const signing = this.db
        .prepare('SELECT kid, master_id, seed FROM signing_keys WHERE seed IS NOT NULL AND master_id <> ?')
        .all(primary.id) as {
        kid: string;
        master_id: string;
        seed: string;
      }[];
      for (const row of signing) {
        const seed = openJson<string>(this.masterById(row.master_id).kek, JSON.parse(row.seed) as Sealed, signingAad(row.kid));
        this.db
          .prepare('UPDATE signing_keys SET master_id = ?, seed = ? WHERE kid = ?')
          .run(primary.id, JSON.stringify(sealJson(primary.kek, seed, signingAad(row.kid))), row.kid);
        rewrapped++;
      }
      const root = JSON.parse(this.db.prepare("SELECT value FROM meta WHERE key = 'root'").pluck().get() as string) as {
        masterId: string;
        sealed: Sealed;
      };
      if (root.masterId !== primary.id) {
        const value = openJson<string>(this.masterById(root.masterId).kek, root.sealed, ROOT_AAD);
        this.db
          .prepare("UPDATE meta SET value = ? WHERE key = 'root'")
          .run(JSON.stringify({ masterId: primary.id, sealed: sealJson(primary.kek, value, ROOT_AAD) }));
        rewrapped++;
      }
    }
    if (rewrapped > 0) {
      this.db.prepare("UPDATE rotations SET rewrapped = rewrapped + ? WHERE kind = 'master' AND state = 'running'").run(rewrapped);
    }
    let retired: string[] = [];
    if (this.underOtherMasters() === 0) {
      const now = this.now();
      this.db.prepare("UPDATE master_keys SET state = 'retired', retired_at = ? WHERE state = 'active' AND id <> ?").run(now, primary.id);
      this.db.prepare("UPDATE rotations SET state = 'done', finished_at = ? WHERE kind = 'master' AND state = 'running'").run(now);
      retired = this.retiredByRotationTo(primary.id, now);
    }
    return { rewrapped, retired };
  }

  /**
   * The master keys retired since the last rotation to `current` began (or just now, when nothing needed
   * re-wrapping): what that rotation retired, also when it is asked again after a run that retired them was
   * cut short before it could say so.
   */
  private retiredByRotationTo(current: string, now: string): string[] {
    return this.db
      .prepare(
        `SELECT id FROM master_keys WHERE state = 'retired' AND id <> @current
           AND retired_at >= coalesce((SELECT max(started_at) FROM rotations WHERE kind = 'master' AND target = @current), @now)
         ORDER BY retired_at, id`,
      )
      .pluck()
      .all({ current, now }) as string[];
  }

  private underOtherMasters(): number {
    return this.db
      .prepare(
        `SELECT (SELECT count(*) FROM tenant_keys WHERE master_id <> @id)
              + (SELECT count(*) FROM signing_keys WHERE seed IS NOT NULL AND master_id <> @id)
              + (SELECT count(*) FROM meta WHERE key = 'root' AND json_extract(value, '$.masterId') <> @id)`,
      )
      .pluck()
      .get({ id: this.primary.id }) as number;
  }

  /**
   * Format 1 to 2, inside one IMMEDIATE transaction (another process opening
   * the same file waits, then finds format 2). The format-1 tenant keys stay
   * derived from the master key that made them, found by opening one of each
   * tenant's rows, so an operator who supplied a new ELMA_MASTER_KEY with the
   * old one as ELMA_MASTER_KEY_PREVIOUS before upgrading still reads everything.
   */
  private migrateToFormat2(): void {
    if (keyVaultFormat(this.db) >= 2) return;
    addFormat2Tables(this.db);
    const tenants = this.db.prepare('SELECT tenant, salt FROM tenants').all() as { tenant: string; salt: Buffer }[];
    const used = new Map<string, MasterKey>();
    const insert = this.db.prepare(
      "INSERT INTO tenant_keys (tenant, version, master_id, salt, wrapped, state, created_at) VALUES (?, 1, ?, ?, NULL, 'active', ?)",
    );
    for (const { tenant, salt } of tenants) {
      const master = this.legacyMasterOf(tenant, salt);
      used.set(master.id, master);
      insert.run(tenant, master.id, salt, this.now());
    }
    this.db.prepare('DELETE FROM tenants').run();
    if (used.size > 1) throw missingMasterKey([...used.keys()], 'format-1 tenants were made under different master keys');
    const root = used.values().next().value ?? this.primary;
    const addMaster = this.db.prepare("INSERT OR IGNORE INTO master_keys (id, state, added_at) VALUES (?, 'active', ?)");
    addMaster.run(root.id, this.now());
    this.db
      .prepare("INSERT INTO meta (key, value) VALUES ('root', ?)")
      .run(JSON.stringify({ masterId: root.id, sealed: sealJson(root.kek, Buffer.from(root.key).toString('base64'), ROOT_AAD) }));
    // The signing key format 1 derived from the master key keeps its id, so certificates already issued still verify.
    const seed = legacySigningSeed(root.key);
    this.insertSigningKey(1, seed, root);
    seed.fill(0);
    setFormat(this.db, FORMAT_VERSIONS.keyVault);
  }

  private legacyMasterOf(tenant: string, salt: Buffer): MasterKey {
    const candidates = [this.primary, ...[...this.masters.values()].filter((m) => m.id !== this.primary.id)];
    const key = this.db.prepare('SELECT record_id, wrapped FROM data_keys WHERE tenant = ? LIMIT 1').get(tenant) as
      { record_id: string; wrapped: Buffer } | undefined;
    const pseudonym = this.db.prepare('SELECT pseudonym, subject FROM subject_pseudonyms WHERE tenant = ? LIMIT 1').get(tenant) as
      { pseudonym: string; subject: Buffer } | undefined;
    if (!key && !pseudonym) return this.primary;
    for (const master of candidates) {
      const tenantKey = deriveTenantKey(master.key, salt, tenant);
      try {
        if (key) unwrapKey(tenantKey, key.wrapped, { tenant, recordId: key.record_id });
        else openJson(tenantKey, JSON.parse(pseudonym!.subject.toString('utf8')) as Sealed, pseudonymAad(tenant, pseudonym!.pseudonym));
        return master;
      } catch {
        // Not this one.
      }
    }
    throw missingMasterKey([], `no supplied master key opens the keys of tenant ${tenant}`);
  }

  private insertSigningKey(version: number, seed: Uint8Array, master: MasterKey = this.primary): string {
    const publicKey = createPublicKey(createPrivateKey(ed25519PrivateKey(seed)));
    const x = publicKey.export({ format: 'jwk' }).x as string;
    const kid = signingKeyId(x);
    this.db
      .prepare("INSERT INTO signing_keys (kid, version, x, master_id, seed, state, created_at) VALUES (?, ?, ?, ?, ?, 'active', ?)")
      .run(
        kid,
        version,
        x,
        master.id,
        JSON.stringify(sealJson(master.kek, Buffer.from(seed).toString('base64'), signingAad(kid))),
        this.now(),
      );
    return kid;
  }

  /**
   * A process started before a master key rotation, with the old key only, must not wrap anything new
   * under it once the rotation retired it: it refuses, and a restart with the new key fixes it.
   */
  private assertPrimaryNotRetired(): void {
    const state = this.db.prepare('SELECT state FROM master_keys WHERE id = ?').pluck().get(this.primary.id);
    if (state === 'retired') {
      throw new DomainError(
        'KEY_VAULT.MASTER_KEY_RETIRED',
        `ELMA_MASTER_KEY (${this.primary.id}) was retired by a master key rotation: restart this process with the new master key`,
        { id: this.primary.id },
      );
    }
  }

  private assertMasterKeysSupplied(path: string): void {
    const needed = this.db
      .prepare(
        `SELECT master_id FROM tenant_keys UNION SELECT master_id FROM signing_keys WHERE seed IS NOT NULL
         UNION SELECT json_extract(value, '$.masterId') FROM meta WHERE key = 'root'`,
      )
      .pluck()
      .all() as string[];
    const missing = needed.filter((id) => !this.masters.has(id));
    if (missing.length > 0) throw missingMasterKey(missing, `${path} needs them`);
  }

  private now(): string {
    return this.clock().toISOString();
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
    this.signingCache = undefined;
    this.generation = current;
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

const ROOT_AAD = 'elma/derivation-root/v1';

/** A master key's id: a MAC of the key (16 hex digits), safe to print, log and store. */
export function masterKeyIdOf(key: Uint8Array): string {
  return `mk-${createHmac('sha256', key).update('elma/master-key-id/v1', 'utf8').digest('hex').slice(0, 16)}`;
}

function masterKeyOf(key: Uint8Array): MasterKey {
  if (key.length < KEY_BYTES) throw new RangeError(`master key must be at least ${KEY_BYTES} bytes`);
  const copy = new Uint8Array(key);
  return {
    id: masterKeyIdOf(copy),
    key: copy,
    kek: new Uint8Array(hkdfSync('sha256', copy, 'elma', 'elma/key-encryption-key/v1', KEY_BYTES)),
  };
}

function missingMasterKey(ids: string[], why?: string): DomainError {
  return new DomainError(
    'KEY_VAULT.MASTER_KEY_MISSING',
    `the key vault needs master key${ids.length === 1 ? '' : 's'} ${ids.join(', ') || '(unknown)'}${why ? ` (${why})` : ''}: ` +
      'supply it as ELMA_MASTER_KEY or ELMA_MASTER_KEY_PREVIOUS (comma-separated), then finish the rotation with `elma keys rotate --master`',
    { ids },
  );
}

function tenantKeyContext(tenant: string, version: number): { tenant: string; recordId: string } {
  return { tenant, recordId: `\u0000tenant-key/v${version}` };
}

function signingAad(kid: string): string {
  return `elma/signing-seed/v1\u0000${kid}`;
}

function cacheKey(tenant: string, recordId: string): string {
  return `${tenant}\u0000${recordId}`;
}

function tenantCacheKey(tenant: string, version: number): string {
  return `${tenant}\u0000${version}`;
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
