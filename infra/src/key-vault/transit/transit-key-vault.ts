import { createHash, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { DomainError, KeyShredded, SUBJECT_PSEUDONYM_PREFIX, TenantDestroyed, type DataKeyOptions, type KeyVault } from '@elma/domain';
import { ownerOnlyDatabaseFile } from '../../files/owner-only';
import { Lru } from '../lru';
import { TransitClient, type TransitClientOptions } from './client';
import { KmsUnavailable } from './errors';
import { openTransitVaultDatabase } from './schema';
import { sharedStatements, shreddedIds } from '../shared-tables';

const KEY_BYTES = 32;
/** Rows re-wrapped per round trip by a rotation. */
const ROTATION_PAGE = 250;

export interface TransitKeyVaultOptions extends TransitClientOptions {
  /** The local SQLite file of wrapped data keys, shredded markers and sealed pseudonyms. */
  path: string;
  /** Transit key names are `<prefix>-<hash of the tenant id>`. Default `elma`; the token's policy is scoped to it. */
  keyPrefix?: string;
  /** Unwrapped data keys kept in memory. Default 50,000. */
  cacheSize?: number;
  /**
   * Renew a renewable token (e.g. a periodic one) at half its remaining lifetime, for as long as the vault is
   * open. Default true. A failed renewal is tried again within a third of the lifetime left, at most 5 s later.
   */
  renewToken?: boolean;
}

export interface TenantKeyRotation {
  /** The transit key's version that now wraps every data key and sealed subject of the tenant. */
  keyVersion: number;
  rewrappedKeys: number;
  resealedSubjects: number;
}

/**
 * Where a tenant's key rotation stands: the shape of `TenantKeyStatus` of the `KeyRotation` port (branch
 * i16-keys), repeated here until the branches meet; the lead replaces it with the port's type.
 */
export interface TenantKeyStatus {
  tenant: string;
  current: number | undefined;
  retiring: number[];
  remaining: number;
}

interface TenantRow {
  key_name: string;
  hmac_version: number;
}

/**
 * A KeyVault whose tenant keys live in a key-management server (OpenBao or HashiCorp Vault, transit engine)
 * and never leave it. Per tenant one transit key, named by a hash of the tenant id (and one for MACs). Data keys are made here
 * (random, 32 bytes), wrapped by transit `encrypt` bound to (tenant, record) as associated data, and kept
 * wrapped in a local SQLite file shaped like the SQLite vault's; reading them is a batched transit `decrypt`,
 * then the same in-process LRU cache. Subject pseudonym rows are found by a transit HMAC of the subject id (the tenant's MAC key) and
 * hold the id transit-encrypted.
 *
 * Shredding deletes the wrapped row (secure_delete, WAL truncated) and needs no server. Destroying a tenant
 * deletes its transit key on the server, so every wrapped key of the tenant, in this file, a copy or a backup,
 * is unreadable for good. Any server failure is a `KmsUnavailable` (503), never a silent fallback.
 */
export class TransitKeyVault implements KeyVault {
  readonly client: TransitClient;
  private readonly db: Database.Database;
  readonly keyPrefix: string;
  private readonly dataKeyCache: Lru<string, Uint8Array>;
  /** Subject MACs by tenant and subject: deterministic under the pinned key version, so cached. */
  private readonly macCache = new Lru<string, Buffer>(10_000);
  private generation: number;
  private readonly statements;
  private renewal: NodeJS.Timeout | undefined;
  /** When the token dies unless renewed (ms since the epoch), as last learnt; unknown before the first look. */
  private tokenExpiresAt: number | undefined;
  private closed = false;

  constructor(options: TransitKeyVaultOptions) {
    this.keyPrefix = options.keyPrefix ?? 'elma';
    if (!/^[a-z0-9][a-z0-9_-]{0,31}$/i.test(this.keyPrefix))
      throw new RangeError('the KMS key prefix must be 1-32 letters, digits, - or _');
    this.client = new TransitClient(options);
    this.dataKeyCache = new Lru(options.cacheSize ?? 50_000);
    ownerOnlyDatabaseFile(options.path);
    this.db = new Database(options.path, { timeout: 5_000 });
    openTransitVaultDatabase(this.db);
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      ...sharedStatements(this.db),
      destroyed: prepare('SELECT key_name, key_deleted FROM destroyed_tenants WHERE tenant = ?'),
      tenant: prepare('SELECT key_name, hmac_version FROM tenants WHERE tenant = ?'),
      insertTenant: prepare('INSERT OR IGNORE INTO tenants (tenant, key_name, hmac_version) VALUES (?, ?, ?)'),
      wrapped: prepare('SELECT wrapped FROM data_keys WHERE tenant = ? AND record_id = ?').pluck(),
      insertKey: prepare('INSERT OR IGNORE INTO data_keys (tenant, record_id, wrapped) VALUES (?, ?, ?)'),
      deleteTenant: prepare('DELETE FROM tenants WHERE tenant = ?'),
      markDestroyed: prepare('INSERT OR IGNORE INTO destroyed_tenants (tenant, key_name) VALUES (?, ?)'),
      keyDeleted: prepare('UPDATE destroyed_tenants SET key_deleted = 1 WHERE tenant = ?'),
      subjectOf: prepare('SELECT subject FROM subject_pseudonyms WHERE tenant = ? AND pseudonym = ?').pluck(),
      insertPseudonym: prepare('INSERT OR IGNORE INTO subject_pseudonyms (tenant, subject_mac, pseudonym, subject) VALUES (?, ?, ?, ?)'),
      staleKeys: prepare('SELECT record_id AS id, wrapped AS ciphertext FROM data_keys WHERE tenant = ? AND wrapped NOT LIKE ? LIMIT ?'),
      rewrapKey: prepare('UPDATE data_keys SET wrapped = ? WHERE tenant = ? AND record_id = ? AND wrapped = ?'),
      staleSubjects: prepare(
        'SELECT pseudonym AS id, subject AS ciphertext FROM subject_pseudonyms WHERE tenant = ? AND subject NOT LIKE ? LIMIT ?',
      ),
      // `vault:v<N>:...`: the version is the number after the 7 characters of `vault:v`.
      staleVersions: prepare(
        `SELECT DISTINCT CAST(substr(c, 8, instr(substr(c, 8), ':') - 1) AS INTEGER) FROM (
           SELECT wrapped AS c FROM data_keys WHERE tenant = ? AND wrapped NOT LIKE ?
           UNION ALL SELECT subject AS c FROM subject_pseudonyms WHERE tenant = ? AND subject NOT LIKE ?)`,
      ).pluck(),
      staleCount: prepare(
        `SELECT (SELECT count(*) FROM data_keys WHERE tenant = ? AND wrapped NOT LIKE ?)
              + (SELECT count(*) FROM subject_pseudonyms WHERE tenant = ? AND subject NOT LIKE ?)`,
      ).pluck(),
      resealSubject: prepare('UPDATE subject_pseudonyms SET subject = ? WHERE tenant = ? AND pseudonym = ? AND subject = ?'),
    };
    this.generation = this.statements.generation.get() as number;
    if (options.renewToken ?? true) this.scheduleRenewal(0);
  }

  /**
   * Keeps a renewable token alive: renews at half its remaining lifetime; a token that never expires needs
   * nothing. A failed renewal is tried again within a third of the lifetime left (at most 5 s later), so a
   * short-period token gets several tries before it dies, even when the first one misses.
   */
  private scheduleRenewal(delayMs: number): void {
    if (this.closed) return;
    this.renewal = setTimeout(() => {
      void (async () => {
        try {
          const lease = await this.client.tokenLease();
          if (!lease.renewable || lease.ttl <= 0) return;
          // Renew at half the remaining lifetime (the first look only measures it, unless it is already short).
          const ttl = delayMs === 0 && lease.ttl > 10 ? lease.ttl : await this.client.renewToken();
          this.tokenExpiresAt = Date.now() + ttl * 1000;
          this.scheduleRenewal(Math.max(500, (ttl * 1000) / 2));
        } catch {
          // Down, sealed or refused: try again soon; the calls that need the server report the failure.
          const left = this.tokenExpiresAt === undefined ? Infinity : this.tokenExpiresAt - Date.now();
          this.scheduleRenewal(Math.min(5_000, Math.max(250, left / 3)));
        }
      })();
    }, delayMs);
    this.renewal.unref();
  }

  /**
   * The transit key name of a tenant: the prefix and a hash of the tenant id (never a subject, never the id
   * itself). Its subject MACs use a second key, `<name>-mac`, which is never rotated: a MAC finds a row and
   * encrypts nothing, and rotating it would change every lookup, so the encryption key's old versions can be
   * retired freely after `rotateTenantKey`.
   */
  keyNameOf(tenant: string): string {
    return `${this.keyPrefix}-${createHash('sha256').update('elma/kms-tenant/v1\u0000', 'utf8').update(tenant, 'utf8').digest('hex').slice(0, 32)}`;
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
      for (const [id, key] of await this.load(tenant, misses, options.create)) {
        if (options.keep !== false) this.dataKeyCache.set(cacheKey(tenant, id), key);
        found.set(id, key);
      }
    }
    return new Map(recordIds.map((id) => [id, found.get(id)!]));
  }

  async shred(tenant: string, recordIds: string[]): Promise<void> {
    if (recordIds.length === 0) return;
    this.db
      .transaction(() => {
        if (this.statements.destroyed.get(tenant)) return;
        for (const recordId of recordIds) {
          this.statements.deleteKey.run(tenant, recordId);
          this.statements.markShredded.run(tenant, recordId);
        }
        this.bumpGeneration();
      })
      .immediate();
    for (const id of recordIds) this.dataKeyCache.delete(cacheKey(tenant, id));
    await this.truncateWal();
  }

  async shreddedAmong(tenant: string, recordIds: string[]): Promise<Set<string>> {
    return shreddedIds(Boolean(this.statements.destroyed.get(tenant)), this.statements.isShredded, tenant, recordIds);
  }

  async isShredded(tenant: string, recordId: string): Promise<boolean> {
    return (await this.shreddedAmong(tenant, [recordId])).size > 0;
  }

  async subjectPseudonyms(tenant: string, subjects: string[], options: { create: boolean }): Promise<Map<string, string>> {
    const unique = [...new Set(subjects)];
    const pseudonyms = new Map<string, string>();
    if (unique.length === 0) return pseudonyms;
    this.dropCachesIfOthersShredded();
    if (this.statements.destroyed.get(tenant)) {
      if (options.create) throw new TenantDestroyed(tenant);
      return pseudonyms;
    }
    let row = this.tenantRow(tenant);
    if (!row) {
      if (!options.create) return pseudonyms;
      row = await this.ensureTenant(tenant);
    }
    const macs = await this.macsOf(tenant, row, unique);
    unique.forEach((subject, i) => {
      const pseudonym = this.statements.pseudonym.get(tenant, macs[i]) as string | undefined;
      if (pseudonym) pseudonyms.set(subject, pseudonym);
    });
    const missing = unique.map((subject, i) => ({ subject, mac: macs[i] })).filter(({ subject }) => !pseudonyms.has(subject));
    if (!options.create || missing.length === 0) return pseudonyms;
    const fresh = missing.map(() => `${SUBJECT_PSEUDONYM_PREFIX}${randomBytes(16).toString('hex')}`);
    const sealed = await this.client.encrypt(
      row.key_name,
      missing.map(({ subject }, i) => ({ plaintext: Buffer.from(subject, 'utf8'), aad: pseudonymAad(tenant, fresh[i]) })),
    );
    // One write: a concurrent first write of the same subject (this process or another) loses to the row
    // already there and gets its pseudonym.
    this.db
      .transaction(() => {
        if (this.statements.destroyed.get(tenant)) throw new TenantDestroyed(tenant);
        missing.forEach(({ subject, mac }, i) => {
          this.statements.insertPseudonym.run(tenant, mac, fresh[i], sealed[i]);
          pseudonyms.set(subject, this.statements.pseudonym.get(tenant, mac) as string);
        });
      })
      .immediate();
    return new Map(unique.filter((s) => pseudonyms.has(s)).map((s) => [s, pseudonyms.get(s)!]));
  }

  async subjectsOfPseudonyms(tenant: string, pseudonyms: string[]): Promise<Map<string, string>> {
    const subjects = new Map<string, string>();
    if (pseudonyms.length === 0 || this.statements.destroyed.get(tenant)) return subjects;
    const row = this.tenantRow(tenant);
    if (!row) return subjects;
    const sealed = [...new Set(pseudonyms)]
      .map((pseudonym) => ({ pseudonym, ciphertext: this.statements.subjectOf.get(tenant, pseudonym) as string | undefined }))
      .filter((s): s is { pseudonym: string; ciphertext: string } => s.ciphertext !== undefined);
    if (sealed.length === 0) return subjects;
    const opened = await this.client.decrypt(
      row.key_name,
      sealed.map(({ pseudonym, ciphertext }) => ({ ciphertext, aad: pseudonymAad(tenant, pseudonym) })),
    );
    sealed.forEach(({ pseudonym }, i) => subjects.set(pseudonym, opened[i].toString('utf8')));
    return subjects;
  }

  async forgetSubject(tenant: string, subject: string): Promise<string | undefined> {
    if (this.statements.destroyed.get(tenant)) return undefined;
    const row = this.tenantRow(tenant);
    if (!row) return undefined;
    const [mac] = await this.macsOf(tenant, row, [subject]);
    const pseudonym = this.db
      .transaction(() => {
        const found = this.statements.pseudonym.get(tenant, mac) as string | undefined;
        this.statements.deletePseudonym.run(tenant, mac);
        return found;
      })
      .immediate();
    this.macCache.delete(cacheKey(tenant, subject));
    if (pseudonym !== undefined) await this.truncateWal();
    return pseudonym;
  }

  /**
   * Forgets the tenant here (rows, marker), then deletes its transit key on the server. When the server cannot
   * be reached the local part is done and this throws `KmsUnavailable`: calling it again finishes the deletion.
   */
  async destroyTenant(tenant: string): Promise<void> {
    const keyName = this.tenantRow(tenant)?.key_name ?? this.keyNameOf(tenant);
    this.db
      .transaction(() => {
        this.statements.deleteTenantPseudonyms.run(tenant);
        this.statements.deleteTenantKeys.run(tenant);
        this.statements.deleteTenantShredded.run(tenant);
        this.statements.deleteTenant.run(tenant);
        this.statements.markDestroyed.run(tenant, keyName);
        this.bumpGeneration();
      })
      .immediate();
    const prefix = cacheKey(tenant, '');
    this.dataKeyCache.deleteWhere((key) => key.startsWith(prefix));
    this.macCache.deleteWhere((key) => key.startsWith(prefix));
    await this.truncateWal();
    const marker = this.statements.destroyed.get(tenant) as { key_name: string; key_deleted: number };
    if (marker.key_deleted) return;
    await Promise.all([this.client.deleteKey(marker.key_name), this.client.deleteKey(macKeyOf(marker.key_name))]);
    this.statements.keyDeleted.run(tenant);
  }

  /**
   * Rotates the tenant's transit key and re-wraps every data key and sealed subject of the tenant under the
   * new version (decrypt + encrypt in batches: the data itself is not touched), then retires the old
   * versions on the server. `beginTenantRotation` + `rewrapTenant` until nothing remains.
   */
  async rotateTenantKey(tenant: string): Promise<TenantKeyRotation> {
    let status = await this.beginTenantRotation(tenant);
    let rewrappedKeys = 0;
    let resealedSubjects = 0;
    for (;;) {
      const step = await this.rewrapBatch(tenant, ROTATION_PAGE);
      rewrappedKeys += step.keys;
      resealedSubjects += step.subjects;
      status = step.status;
      // Done, or no progress (every row of the batch changed under us): the status says what remains.
      if (status.remaining === 0 || step.keys + step.subjects === 0) break;
    }
    return { keyVersion: status.current ?? 0, rewrappedKeys, resealedSubjects };
  }

  /**
   * Makes a new version of the tenant's transit key current (new data keys are wrapped under it at once),
   * or resumes the rotation under way when rows still wait under an older version. `KeyRotation` of the port.
   */
  async beginTenantRotation(tenant: string): Promise<TenantKeyStatus> {
    if (this.statements.destroyed.get(tenant)) throw new TenantDestroyed(tenant);
    const row = this.tenantRow(tenant);
    const status = await this.tenantKeyStatus(tenant);
    if (!row || status.remaining > 0) return status;
    await this.client.rotateKey(row.key_name);
    return this.tenantKeyStatus(tenant);
  }

  /**
   * Re-wraps up to `batchSize` rows still under an older version, in one write (each row compare-and-set, so
   * a row shredded meanwhile stays shredded). When none are left, the older versions are destroyed on the
   * server (`min_decryption_version`, then `trim`): a copy of an old ciphertext no longer opens.
   */
  async rewrapTenant(tenant: string, batchSize: number): Promise<{ rewrapped: number; status: TenantKeyStatus }> {
    const step = await this.rewrapBatch(tenant, batchSize);
    return { rewrapped: step.keys + step.subjects, status: step.status };
  }

  /** The current version of the tenant's transit key, the older ones still wrapping rows, and how many rows. */
  async tenantKeyStatus(tenant: string): Promise<TenantKeyStatus> {
    const row = this.statements.destroyed.get(tenant) ? undefined : this.tenantRow(tenant);
    if (!row) return { tenant, current: undefined, retiring: [], remaining: 0 };
    const key = await this.client.readKey(row.key_name);
    if (!key)
      throw new KmsUnavailable(
        'failed',
        'the key-management server has no key for this tenant (deleted outside ELMA, or another mount or prefix)',
      );
    const current = `vault:v${key.latestVersion}:%`;
    const versions = new Set<number>();
    for (const version of this.statements.staleVersions.all(tenant, current, tenant, current) as number[]) versions.add(version);
    const remaining = (this.statements.staleCount.get(tenant, current, tenant, current) as number) ?? 0;
    return { tenant, current: key.latestVersion, retiring: [...versions].sort((a, b) => a - b), remaining };
  }

  private async rewrapBatch(tenant: string, batchSize: number): Promise<{ keys: number; subjects: number; status: TenantKeyStatus }> {
    if (this.statements.destroyed.get(tenant)) throw new TenantDestroyed(tenant);
    const row = this.tenantRow(tenant);
    if (!row) return { keys: 0, subjects: 0, status: await this.tenantKeyStatus(tenant) };
    const key = await this.client.readKey(row.key_name);
    if (!key)
      throw new KmsUnavailable(
        'failed',
        'the key-management server has no key for this tenant (deleted outside ELMA, or another mount or prefix)',
      );
    const current = `vault:v${key.latestVersion}:%`;
    const keyRows = this.statements.staleKeys.all(tenant, current, batchSize) as { id: string; ciphertext: string }[];
    const subjectRows =
      keyRows.length < batchSize
        ? (this.statements.staleSubjects.all(tenant, current, batchSize - keyRows.length) as { id: string; ciphertext: string }[])
        : [];
    const items = [
      ...keyRows.map((r) => ({ ...r, aad: dataKeyAad(tenant, r.id), update: this.statements.rewrapKey })),
      ...subjectRows.map((r) => ({ ...r, aad: pseudonymAad(tenant, r.id), update: this.statements.resealSubject })),
    ];
    let keys = 0;
    let subjects = 0;
    if (items.length > 0) {
      const plain = await this.client.decrypt(
        row.key_name,
        items.map((i) => ({ ciphertext: i.ciphertext, aad: i.aad })),
      );
      const fresh = await this.client.encrypt(
        row.key_name,
        items.map((i, n) => ({ plaintext: plain[n], aad: i.aad })),
      );
      plain.forEach((p) => p.fill(0));
      this.db
        .transaction(() => {
          items.forEach((item, n) => {
            const changed = item.update.run(fresh[n], tenant, item.id, item.ciphertext).changes;
            if (item.update === this.statements.rewrapKey) keys += changed;
            else subjects += changed;
          });
        })
        .immediate();
      await this.truncateWal();
    }
    const status = await this.tenantKeyStatus(tenant);
    if (status.remaining === 0 && status.current !== undefined && key.minDecryptionVersion < status.current) {
      await this.client.retireVersionsBefore(row.key_name, status.current);
    }
    return { keys, subjects, status };
  }

  /** Resolves when the server answers, unsealed, and accepts the token; throws `KmsUnavailable` otherwise. */
  async check(): Promise<void> {
    await this.client.check();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.renewal);
    if (!this.db.open) return;
    this.dataKeyCache.clear();
    this.macCache.clear();
    this.db.close();
  }

  /** Every requested key, creating the missing ones (with `create`) in one write after one encrypt round trip. */
  private async load(tenant: string, recordIds: string[], create: boolean): Promise<Map<string, Uint8Array>> {
    const read = this.db
      .transaction(() => {
        if (this.statements.destroyed.get(tenant)) throw new TenantDestroyed(tenant);
        for (const recordId of recordIds) if (this.statements.isShredded.get(tenant, recordId)) throw new KeyShredded(recordId);
        const wrapped = new Map<string, string>();
        for (const recordId of recordIds) {
          const value = this.statements.wrapped.get(tenant, recordId) as string | undefined;
          if (value) wrapped.set(recordId, value);
        }
        return { row: this.tenantRow(tenant), wrapped };
      })
      .deferred();
    let row = read.row;
    const missing = recordIds.filter((id) => !read.wrapped.has(id));
    if (!row || missing.length > 0) {
      if (!create) throw keyNotFound(tenant, row ? missing : recordIds);
      row ??= await this.ensureTenant(tenant);
    }
    const keyName = row.key_name;
    const fresh = missing.map(() => new Uint8Array(randomBytes(KEY_BYTES)));
    const [opened, sealed] = await Promise.all([
      this.unwrap(tenant, keyName, read.wrapped),
      missing.length > 0
        ? this.client.encrypt(
            keyName,
            missing.map((id, i) => ({ plaintext: fresh[i], aad: dataKeyAad(tenant, id) })),
          )
        : Promise.resolve([]),
    ]);
    if (missing.length === 0) return opened;
    // Checked again in the write: a shred or a destruction since the read must win over the new keys.
    const raced = this.db
      .transaction(() => {
        if (this.statements.destroyed.get(tenant)) throw new TenantDestroyed(tenant);
        for (const recordId of missing) if (this.statements.isShredded.get(tenant, recordId)) throw new KeyShredded(recordId);
        const theirs = new Map<string, string>();
        missing.forEach((recordId, i) => {
          if (this.statements.insertKey.run(tenant, recordId, sealed[i]).changes === 0)
            theirs.set(recordId, this.statements.wrapped.get(tenant, recordId) as string);
        });
        return theirs;
      })
      .immediate();
    missing.forEach((recordId, i) => {
      if (!raced.has(recordId)) opened.set(recordId, fresh[i]);
    });
    // Another writer created some of them first: theirs are the keys.
    for (const [id, key] of await this.unwrap(tenant, keyName, raced)) opened.set(id, key);
    return opened;
  }

  private async unwrap(tenant: string, keyName: string, wrapped: Map<string, string>): Promise<Map<string, Uint8Array>> {
    const ids = [...wrapped.keys()];
    if (ids.length === 0) return new Map();
    const plain = await this.client.decrypt(
      keyName,
      ids.map((id) => ({ ciphertext: wrapped.get(id)!, aad: dataKeyAad(tenant, id) })),
    );
    return new Map(ids.map((id, i) => [id, new Uint8Array(plain[i])]));
  }

  /** The tenant's row, creating its transit key first when it has none. */
  private async ensureTenant(tenant: string): Promise<TenantRow> {
    const keyName = this.keyNameOf(tenant);
    await Promise.all([this.client.createKey(keyName), this.client.createKey(macKeyOf(keyName))]);
    const version = (await this.client.readKey(macKeyOf(keyName)))?.latestVersion ?? 1;
    const row = this.db
      .transaction(() => {
        if (this.statements.destroyed.get(tenant)) return undefined;
        this.statements.insertTenant.run(tenant, keyName, version);
        return this.tenantRow(tenant);
      })
      .immediate();
    if (!row) {
      // Destroyed while the key was being made: the key just made must not outlive the tenant.
      await Promise.all([this.client.deleteKey(keyName), this.client.deleteKey(macKeyOf(keyName))]).catch(() => undefined);
      throw new TenantDestroyed(tenant);
    }
    return row;
  }

  private tenantRow(tenant: string): TenantRow | undefined {
    return this.statements.tenant.get(tenant) as TenantRow | undefined;
  }

  /** The subjects' MACs, in order: from the cache, else one batched transit HMAC. */
  private async macsOf(tenant: string, row: TenantRow, subjects: string[]): Promise<Buffer[]> {
    const macs = subjects.map((subject) => this.macCache.get(cacheKey(tenant, subject)));
    const missing = subjects.filter((_, i) => !macs[i]);
    if (missing.length > 0) {
      const fresh = await this.client.hmac(
        macKeyOf(row.key_name),
        missing.map((subject) => `elma/subject-pseudonym/v1\u0000${subject}`),
        row.hmac_version,
      );
      missing.forEach((subject, i) => this.macCache.set(cacheKey(tenant, subject), fresh[i]));
    }
    return subjects.map((subject, i) => macs[i] ?? this.macCache.get(cacheKey(tenant, subject))!);
  }

  private bumpGeneration(): void {
    const before = this.statements.generation.get() as number;
    const after = this.statements.bumpGeneration.get() as number;
    if (before === this.generation) this.generation = after;
  }

  private dropCachesIfOthersShredded(): void {
    const current = this.statements.generation.get() as number;
    if (current === this.generation) return;
    this.dataKeyCache.clear();
    this.macCache.clear();
    this.generation = current;
  }

  private async truncateWal(): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      if (!result || result.busy === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

function macKeyOf(keyName: string): string {
  return `${keyName}-mac`;
}

function cacheKey(tenant: string, id: string): string {
  return `${tenant}\u0000${id}`;
}

function dataKeyAad(tenant: string, recordId: string): string {
  return `elma/data-key/v1\u0000${tenant}\u0000${recordId}`;
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
