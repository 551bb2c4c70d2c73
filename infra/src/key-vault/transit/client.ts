import { IntegrityCheckFailed } from '@elma/shared';
import { KmsUnavailable } from './errors';

export interface TransitClientOptions {
  /** `http(s)://host:port` of the OpenBao or Vault server. */
  address: string;
  /** Sent as `X-Vault-Token`; never logged, never in an error. */
  token: string;
  /** Mount path of the transit engine. Default `transit`. */
  mount?: string;
  /** Per request. Default 5 s. */
  timeoutMs?: number;
  /** Items per batch request. Default 100 (OpenBao refuses a request body of more than 1,000 JSON strings by default). */
  batchSize?: number;
}

/** What a request carries: one plaintext and the associated data it is bound to. */
export interface Sealable {
  plaintext: Uint8Array;
  aad: string;
}

export interface Openable {
  ciphertext: string;
  aad: string;
}

type Json = Record<string, unknown>;

/** One item's answer in a batch. */
interface BatchResult {
  ciphertext?: string;
  plaintext?: string;
  hmac?: string;
  error?: string;
}

/** The parts of the server's answers the client reads. */
interface Answer {
  errors?: unknown;
  data?: { batch_results?: BatchResult[]; latest_version?: number; min_decryption_version?: number };
}

/**
 * The few transit calls the key vault makes, over plain fetch, batched (`batch_input`) so a hundred keys
 * cost one round trip. Every failure becomes a `KmsUnavailable` saying which (down, sealed, forbidden,
 * failed), or `IntegrityCheckFailed` when a ciphertext does not open under its key and associated data.
 */
export class TransitClient {
  private readonly base: string;
  private readonly token: string;
  private readonly mount: string;
  private readonly timeoutMs: number;
  private readonly batchSize: number;

  constructor(options: TransitClientOptions) {
    if (!/^https?:\/\/[^/]+/.test(options.address)) throw new RangeError('the KMS address must be an http(s) URL');
    if (!options.token) throw new RangeError('the KMS token is empty');
    this.base = options.address.replace(/\/+$/, '');
    this.token = options.token;
    this.mount = (options.mount ?? 'transit').replace(/^\/+|\/+$/g, '');
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.batchSize = options.batchSize ?? 100;
  }

  /** Creates the key (AES-256-GCM96, not exportable, no plaintext backup). Idempotent. */
  async createKey(name: string): Promise<void> {
    await this.call('POST', `${this.mount}/keys/${name}`, { type: 'aes256-gcm96', exportable: false, allow_plaintext_backup: false });
  }

  /** The key's metadata, or undefined when the server has no such key. */
  async readKey(name: string): Promise<{ latestVersion: number; minDecryptionVersion: number } | undefined> {
    const answer = await this.call('GET', `${this.mount}/keys/${name}`, undefined, { notFound: true });
    if (!answer) return undefined;
    return { latestVersion: answer.data?.latest_version ?? 0, minDecryptionVersion: answer.data?.min_decryption_version ?? 0 };
  }

  /** Allows deletion, then deletes the key and every version of it. Idempotent: a key already gone is fine. */
  async deleteKey(name: string): Promise<void> {
    const configured = await this.call('POST', `${this.mount}/keys/${name}/config`, { deletion_allowed: true }, { notFound: true });
    if (!configured) return;
    await this.call('DELETE', `${this.mount}/keys/${name}`, undefined, { notFound: true });
  }

  /** A new key version for encryption; older versions still decrypt. Returns the new latest version. */
  async rotateKey(name: string): Promise<number> {
    const answer = await this.call('POST', `${this.mount}/keys/${name}/rotate`, {});
    if (answer?.data?.latest_version) return answer.data.latest_version;
    return (await this.readKey(name))?.latestVersion ?? 0;
  }

  /** Destroys the key's versions before `version` (no decryption with them, then their key material deleted). */
  async retireVersionsBefore(name: string, version: number): Promise<void> {
    await this.call('POST', `${this.mount}/keys/${name}/config`, { min_decryption_version: version, min_encryption_version: version });
    await this.call('POST', `${this.mount}/keys/${name}/trim`, { min_available_version: version });
  }

  /** Encrypts each plaintext bound to its associated data, under the key's latest version. */
  async encrypt(name: string, items: Sealable[]): Promise<string[]> {
    return this.batched(items, async (chunk) => {
      const results = await this.batch(`${this.mount}/encrypt/${name}`, {
        batch_input: chunk.map((item) => ({ plaintext: b64(item.plaintext), associated_data: b64(item.aad) })),
      });
      return results.map((result) => this.itemResult(result, 'encrypt', () => String(result.ciphertext)));
    });
  }

  async decrypt(name: string, items: Openable[]): Promise<Buffer[]> {
    return this.batched(items, async (chunk) => {
      const results = await this.batch(`${this.mount}/decrypt/${name}`, {
        batch_input: chunk.map((item) => ({ ciphertext: item.ciphertext, associated_data: b64(item.aad) })),
      });
      return results.map((result) => this.itemResult(result, 'decrypt', () => Buffer.from(String(result.plaintext), 'base64')));
    });
  }

  /** HMAC-SHA-256 of each input under the given key version (pinned, so a rotation does not change the MACs). */
  async hmac(name: string, inputs: string[], keyVersion: number): Promise<Buffer[]> {
    return this.batched(inputs, async (chunk) => {
      const results = await this.batch(`${this.mount}/hmac/${name}/sha2-256`, {
        key_version: keyVersion,
        batch_input: chunk.map((input) => ({ input: b64(input) })),
      });
      return results.map((result) =>
        this.itemResult(result, 'hmac', () => Buffer.from(String(result.hmac).replace(/^vault:v\d+:/, ''), 'base64')),
      );
    });
  }

  /** The token's remaining lifetime in seconds (0: never expires) and whether it can be renewed. */
  async tokenLease(): Promise<{ ttl: number; renewable: boolean }> {
    const answer = (await this.call('GET', 'auth/token/lookup-self')) as { data?: { ttl?: number; renewable?: boolean } } | undefined;
    return { ttl: answer?.data?.ttl ?? 0, renewable: answer?.data?.renewable ?? false };
  }

  /** Renews the token (its period, or its TTL increment); returns the new lifetime in seconds. */
  async renewToken(): Promise<number> {
    const answer = (await this.call('POST', 'auth/token/renew-self', {})) as { auth?: { lease_duration?: number } } | undefined;
    return answer?.auth?.lease_duration ?? 0;
  }

  /** Reachable, unsealed and accepting the token: resolves; else throws KmsUnavailable. */
  async check(): Promise<void> {
    await this.call('GET', 'auth/token/lookup-self');
  }

  private async batched<I, O>(items: I[], run: (chunk: I[]) => Promise<O[]>): Promise<O[]> {
    const out: O[] = [];
    for (let i = 0; i < items.length; i += this.batchSize) out.push(...(await run(items.slice(i, i + this.batchSize))));
    return out;
  }

  /** A batch answers 400 when one item fails, with every item's result: those are read, not the status. */
  private async batch(path: string, body: Json): Promise<BatchResult[]> {
    const answer = await this.call('POST', path, body, { batch: true });
    const results = answer?.data?.batch_results;
    if (!Array.isArray(results) || results.length !== (body.batch_input as unknown[]).length) {
      throw new KmsUnavailable('failed', `the key-management server answered a ${opOf(path)} batch without one result per item`);
    }
    return results;
  }

  private itemResult<T>(result: BatchResult, op: string, value: () => T): T {
    const error = result.error;
    if (!error) return value();
    if (/authentication failed|invalid ciphertext|unable to decode/i.test(error))
      throw new IntegrityCheckFailed(`a ciphertext of the KMS (${op})`);
    throw new KmsUnavailable('failed', `the key-management server refused a ${op} item: ${clip(error)}`);
  }

  private async call(
    method: string,
    path: string,
    body?: Json,
    options: { notFound?: boolean; batch?: boolean } = {},
  ): Promise<Answer | undefined> {
    let response: Response;
    try {
      response = await fetch(`${this.base}/v1/${path}`, {
        method,
        headers: { 'X-Vault-Token': this.token, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as Error)?.name === 'TimeoutError' || (error as Error)?.name === 'AbortError';
      const cause = (error as { cause?: { code?: string } })?.cause?.code;
      throw new KmsUnavailable(
        'unreachable',
        `the key-management server does not answer (${timedOut ? `no answer within ${this.timeoutMs} ms` : (cause ?? 'connection failed')}): check ELMA_KMS_ADDR and that the server runs`,
      );
    }
    const text = await response.text().catch(() => '');
    let json: Answer | undefined;
    try {
      json = text ? (JSON.parse(text) as Answer) : undefined;
    } catch {
      json = undefined;
    }
    if (response.ok) return json ?? {};
    const errors = Array.isArray(json?.errors) ? json.errors.map(String) : [];
    if (options.batch && response.status === 400 && Array.isArray(json?.data?.batch_results)) return json;
    // No engine at this path (a wrong ELMA_KMS_MOUNT, or the engine not mounted yet): it says nothing about a key, so
    // it must not pass for a missing one (a deletion would be recorded as done while the key stays on the server).
    if (response.status === 404 && errors.some((e) => /no handler for route/i.test(e))) {
      throw new KmsUnavailable(
        'failed',
        `the key-management server has no transit engine at the configured mount (404 on ${opOf(path)}): check ELMA_KMS_MOUNT (a server unsealed a moment ago may still be mounting it)`,
      );
    }
    // A key that is not there: 404 on reads, 400 "no existing key named ..." on its configuration, 400 "could not
    // delete key; not found" on a delete that another delete (or the server's own cleanup) finished first.
    if (
      options.notFound &&
      (response.status === 404 ||
        (response.status === 400 && errors.some((e) => /no existing key|could not delete key; not found/i.test(e))))
    ) {
      return undefined;
    }
    if (response.status === 503 && errors.some((e) => /sealed/i.test(e))) {
      throw new KmsUnavailable(
        'sealed',
        'the key-management server is sealed: unseal it (`bao operator unseal`), then ELMA resumes on its own',
      );
    }
    if (response.status === 403 || response.status === 401) {
      throw new KmsUnavailable(
        'forbidden',
        `the key-management server refused ELMA's token (${response.status} on ${opOf(path)}): check ELMA_KMS_TOKEN, its expiry and its policy`,
      );
    }
    throw new KmsUnavailable(
      'failed',
      `the key-management server answered ${response.status} to ${opOf(path)}${errors.length ? `: ${clip(errors.join('; '))}` : ''}`,
    );
  }
}

function b64(value: Uint8Array | string): string {
  return (typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value)).toString('base64');
}

/** The operation of a path (`encrypt`, `keys`...), for messages: no key name, no mount. */
function opOf(path: string): string {
  const parts = path.split('/');
  return path.startsWith('auth/') || path.startsWith('sys/') ? parts.slice(0, 2).join('/') : (parts[1] ?? path);
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
