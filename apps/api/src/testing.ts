import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { streams, type Clock, type Principal } from '@elma/domain';
import { activeTracing, loadConfig, mintToken } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger, type Logger } from '@elma/shared';
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { bundleElmaWorkflows, createWorkerFor, temporalOffboardWorkflows, wireTemporal } from '@elma/worker';
import { expect, inject } from 'vitest';
import { createApi } from './app';
import type { ErasureWorkflows } from './erasure/erasure-desk';
import type { OffboardWorkflows } from './offboarding/offboarding-desk';
import type { SubjectAccessWorkflows } from './subject-access/subject-access-desk';

/** A real ELMA on real SQLite files in a temporary folder, served over real HTTP on a free port. */
/** A parsed JSON response body: tests read whichever fields they assert on. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON of any shape, read field by field by the assertions
export type Json = any;

export interface TestApp {
  url: string;
  elma: Elma;
  app: NestFastifyApplication;
  dataDir: string;
  /** The test's own task queue, when started with `temporal`. */
  taskQueue?: string;
  token(claims?: Partial<Principal>): Promise<string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  dataDir?: string;
  keep?: boolean;
  clock?: Clock;
  /**
   * Erasure endpoints backed by the real Temporal server of the test run: an in-process worker on a task
   * queue of its own (test files share the server), plus the API's Temporal client.
   */
  temporal?: { address?: string; workflowBundle?: WorkflowBundle; consolidateEveryEvents?: number };
  /** More configuration, as environment variables (e.g. `ELMA_MAX_INFLIGHT`). */
  env?: Record<string, string>;
  /** Where ELMA logs (default: nowhere), for tests of what is logged. */
  logger?: Logger;
}

/**
 * The memory index this run's apps use: Elasticsearch when ELMA_E2E_ELASTICSEARCH_URL is set, else the
 * embedded one (SQLite files in the app's data folder). For the few checks that only one engine can make.
 */
export const e2eIndex: 'elasticsearch' | 'sqlite' = process.env.ELMA_E2E_ELASTICSEARCH_URL ? 'elasticsearch' : 'sqlite';

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'elma-test-'));
  const elasticsearch = process.env.ELMA_E2E_ELASTICSEARCH_URL;
  const config = loadConfig({
    // The lexical embedder keeps the suites fast; a test that needs the model asks for it in `env`.
    ELMA_EMBEDDER: 'hashing',
    ELMA_DATA_DIR: dataDir,
    ELMA_PORT: '0',
    ELMA_TEMPORAL_DB_FILE: process.env.ELMA_TEMPORAL_DB_FILE,
    // Opt-in: the API suites on Elasticsearch instead of the embedded index, each app in a namespace of its own.
    ...(elasticsearch
      ? { ELMA_ELASTICSEARCH_URL: elasticsearch, ELMA_ES_NAMESPACE: `e2e${randomUUID().replaceAll('-', '').slice(0, 12)}` }
      : {}),
    ...options.env,
  });
  const elma = await openElma(config, { logger: options.logger ?? silentLogger, clock: options.clock });
  await elma.runner.start();
  const stops: (() => Promise<unknown>)[] = [];
  let erasures: ErasureWorkflows | undefined;
  let offboarding: OffboardWorkflows | undefined;
  let subjectAccess: SubjectAccessWorkflows | undefined;
  let taskQueue: string | undefined;
  if (options.temporal) {
    // The run's dev server (tests/temporal.global-setup.ts) and ELMA's workflows, unless the test names others.
    const address = options.temporal.address ?? inject('temporalAddress');
    // The run's bundle (tests/temporal.global-setup.ts), unless traces are on: that bundle carries their interceptors.
    const workflowBundle =
      options.temporal.workflowBundle ?? (activeTracing() ? await bundleElmaWorkflows() : { codePath: inject('workflowBundlePath') });
    taskQueue = `elma-test-${randomUUID()}`;
    const worker = await createWorkerFor(elma, { address, taskQueue, workflowBundle });
    const running = worker.run();
    const connection = await Connection.connect({ address });
    stops.push(async () => {
      await connection.close();
      await worker.shutdown();
      await running.catch(() => undefined);
    });
    const wired = await wireTemporal(elma, { connection, taskQueue }, { consolidateEveryEvents: options.temporal.consolidateEveryEvents });
    erasures = wired;
    subjectAccess = wired.subjectAccess;
    offboarding = temporalOffboardWorkflows({ connection, taskQueue });
  }
  const app = await createApi(elma, { erasures, offboarding, subjectAccess });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    elma,
    app,
    dataDir,
    token: (claims = {}) =>
      mintToken(
        config.jwtSecret,
        { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal', ...claims },
        { issuer: config.auth.issuer, audience: config.auth.audience, ttlSeconds: Math.min(8 * 3600, config.auth.maxTtlSeconds) },
      ),
    taskQueue,
    async close() {
      await app.close();
      for (const stop of stops.reverse()) await stop();
      await elma.close();
      if (config.elasticsearch && !options.keep) await deleteNamespace(config.elasticsearch.url, config.elasticsearch.namespace);
      if (!options.keep) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Deletes every index of an app's namespace on the test node, checkpoints and usage counts included, once the
 * app is closed (so no projection or usage write recreates one behind it): a suite leaves nothing on a node it
 * shares with later runs. A namespace has no hyphen, so `{namespace}-*` reaches no other; the names are
 * resolved first, as a wildcard delete may be refused (`action.destructive_requires_name`).
 */
async function deleteNamespace(url: string, namespace: string): Promise<void> {
  const resolved = await fetch(`${url}/_resolve/index/${namespace}-*?expand_wildcards=all`);
  if (!resolved.ok) throw new Error(`could not list the test indices of ${namespace}: HTTP ${resolved.status}`);
  const names = ((await resolved.json()) as { indices: { name: string }[] }).indices.map((i) => i.name);
  if (names.length === 0) return;
  const deleted = await fetch(`${url}/${names.join(',')}`, { method: 'DELETE' });
  if (!deleted.ok) throw new Error(`could not delete the test indices of ${namespace}: HTTP ${deleted.status}`);
}

export { chatEvent } from '@elma/domain/testing';

/** Events in a tenant's data streams (audit entries are written on every call, by design, so the log head moves). */
export async function dataEventCount(elma: Elma, tenant: string): Promise<number> {
  let n = 0;
  for await (const _ of elma.log.readAll({
    filter: { streamNamePrefix: [streams.eventsOfTenant(tenant), streams.memoriesOfTenant(tenant)] },
  }))
    n++;
  return n;
}

/** A JSON call as `token`; the body is parsed when it is JSON. */
export async function callApi(url: string, token: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const text = bytes.toString('utf8');
  let json: Json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return {
    status: response.status,
    text,
    bytes,
    body: json,
    contentType: response.headers.get('content-type') ?? '',
    headers: response.headers,
  };
}

/** Ingests `events` over REST (202 expected) and waits until the projection has indexed them. */
export async function ingestSettled(t: TestApp, token: string, events: unknown[]): Promise<void> {
  const ingest = await callApi(t.url, token, 'POST', '/v1/events', { events });
  expect(ingest.status, ingest.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
}

/**
 * Writes a semantic memory derived from `sourceEventIds` as `token` (purpose support) over REST, expects 201, and
 * returns its id: the derived record the erasure and subject-access suites follow to its sources' subjects.
 */
export async function deriveMemory(url: string, token: string, text: string, sourceEventIds: string[]): Promise<string> {
  const created = await callApi(url, token, 'POST', '/v1/memories', {
    kind: 'semantic',
    content: { text },
    sourceEventIds,
    purposes: ['support'],
  });
  expect(created.status, created.text).toBe(201);
  return created.body.memory.id as string;
}

/** The erasure statuses after which nothing more happens to a request. */
export const ERASURE_ENDS = ['completed', 'denied', 'approval_timed_out', 'verification_failed', 'failed'];

/** Polls GET /v1/erasures/{id} as `token` until its status is one of `until` (default: an end); returns that progress. */
export async function settleErasure(url: string, token: string, id: string, until: string[] = ERASURE_ENDS): Promise<Json> {
  for (let i = 0; i < 600; i++) {
    const progress = await callApi(url, token, 'GET', `/v1/erasures/${id}`);
    if (progress.status !== 200) throw new Error(`GET /v1/erasures/${id} answered ${progress.status}: ${progress.text}`);
    if (until.includes(progress.body.status)) return progress.body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`erasure ${id} did not settle`);
}

/** Changes the tenant's policy as `adminToken` (read, change, write back with its version); expects 200. */
export async function changePolicy(url: string, adminToken: string, change: (policy: Json) => void): Promise<void> {
  const current = await callApi(url, adminToken, 'GET', '/v1/policy');
  const { version, ...document } = current.body;
  change(document);
  const put = await callApi(url, adminToken, 'PUT', `/v1/policy?expectedVersion=${version}`, document);
  if (put.status !== 200) throw new Error(`policy change refused: HTTP ${put.status} ${put.text}`);
}

/** A logger that keeps every line, for tests that check what was (not) logged and at which level. */
export function recordingLogger(): { logger: Logger; lines: LoggedLine[]; errors: () => LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const keep = (level: LoggedLine['level']) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, message, fields });
  return {
    logger: { info: keep('info'), warn: keep('warn'), error: keep('error') },
    lines,
    errors: () => lines.filter((l) => l.level === 'error'),
  };
}

export interface LoggedLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  fields?: Record<string, unknown>;
}

/** One token per role, for subject `<role>-1`, purpose support, clearance restricted. */
export async function roleTokens(t: TestApp, roles: string[]): Promise<Record<string, string>> {
  const tokens: Record<string, string> = {};
  for (const role of roles)
    tokens[role] = await t.token({ sub: `${role}-1`, roles: [role], purposes: ['support'], clearance: 'restricted' });
  return tokens;
}

/** A POST whose body is sent only when `finish` is called: the request is in flight, waiting for its body. */
export function slowRequest(url: string, token: string, path: string, body: unknown) {
  const json = JSON.stringify(body);
  const request = httpRequest(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) },
  });
  let answered = false;
  const response = new Promise<{ status: number; body: Json }>((resolve, reject) => {
    request.on('error', reject);
    request.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
  });
  request.write(json.slice(0, 1));
  return {
    /** Whether the server answered before the body was complete: it shed the request, which then holds nothing. */
    answered: () => answered,
    finish: () => {
      request.end(json.slice(1));
      return response;
    },
  };
}
