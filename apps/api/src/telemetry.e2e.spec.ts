import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, chatEvent, recordingLogger, roleTokens, startTestApp, type LoggedLine, type TestApp, settleErasure } from './testing';

/**
 * Operators' telemetry through a real server on a real Temporal: /metrics in
 * Prometheus format and the access log, after traffic with Chinese and
 * English content and subject ids, and an erasure run to its certificate.
 * Neither may hold any of it: labels and log fields are route templates,
 * codes, tenant ids and keyed pseudonyms only.
 */
const SUBJECT_EN = 'cust-telemetry-ophelia';
const SUBJECT_ZH = '客户-王小明';
const CONTENT_EN = 'Ophelia Marchbanks stores the vault combination behind the lighthouse painting';
const CONTENT_ZH = '王小明的银行卡密码写在厨房日历背面';
const CALLER = 'agent-telemetry-7';

let t: TestApp;
let logged: LoggedLine[];
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);

/** The value of one sample line, e.g. `elma_erasures{status="completed"}`; NaN when absent. */
function sample(text: string, line: string): number {
  const escaped = line.replace(/[{}"()[\]./:+*?^$|\\]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text)?.[1]);
}

const settle = (requestId: string): Promise<{ status: string; subjectPseudonym?: string }> =>
  settleErasure(t.url, tokens.compliance, requestId);

let metrics: string;
let memoryId: string;
const personal: string[] = [SUBJECT_EN, SUBJECT_ZH, CALLER, 'Ophelia', 'Marchbanks', 'lighthouse', '王小明', '银行卡', '厨房'];

beforeAll(async () => {
  const recording = recordingLogger();
  logged = recording.lines;
  t = await startTestApp({ temporal: {}, logger: recording.logger });
  Object.assign(tokens, await roleTokens(t, ['compliance']));
  tokens.agent = await t.token({ sub: CALLER, roles: ['agent'], purposes: ['support'], clearance: 'internal' });

  const ingested = await call('agent', 'POST', '/v1/events', {
    events: [chatEvent(SUBJECT_EN, CONTENT_EN), chatEvent(SUBJECT_ZH, CONTENT_ZH), chatEvent(SUBJECT_EN, 'Ophelia asked for a callback')],
  });
  expect(ingested.status, ingested.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  memoryId = `mem_ep_${ingested.body.events[0].id}`;
  personal.push(memoryId, ingested.body.events[0].id);
  expect((await call('agent', 'GET', `/v1/memories/${memoryId}`)).status).toBe(200);
  expect((await call('agent', 'GET', `/v1/memories/${memoryId}-missing?subject=${encodeURIComponent(SUBJECT_ZH)}`)).status).toBe(404);
  for (const query of ['lighthouse painting vault', '银行卡密码在哪里']) {
    const recalled = await call('agent', 'POST', '/v1/recall', { query, purpose: 'support', budgetTokens: 2000 });
    expect(recalled.status, recalled.text).toBe(200);
  }
  const invalid = await call('agent', 'POST', '/v1/events', { ...chatEvent(SUBJECT_ZH, CONTENT_ZH), occurredAt: 'not a date' });
  expect(invalid.status).toBe(422);

  const requested = await call('compliance', 'POST', '/v1/erasures', {
    scope: { type: 'subject', subject: SUBJECT_ZH },
    reason: 'subject_request',
  });
  expect(requested.status, requested.text).toBe(202);
  const ended = await settle(requested.body.requestId);
  expect(ended.status).toBe('completed');
  if (ended.subjectPseudonym) personal.push(ended.subjectPseudonym);

  const response = await fetch(`${t.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  metrics = await response.text();
}, 180_000);
afterAll(async () => t?.close());

describe('/metrics in Prometheus format', () => {
  it('counts and times requests by route template, method and status, never by URL', () => {
    expect(sample(metrics, 'elma_http_requests_total{route="/v1/memories/:id",method="GET",status="200"}')).toBe(1);
    expect(sample(metrics, 'elma_http_requests_total{route="/v1/memories/:id",method="GET",status="404"}')).toBe(1);
    expect(sample(metrics, 'elma_http_requests_total{route="/v1/recall",method="POST",status="200"}')).toBe(2);
    expect(sample(metrics, 'elma_http_request_duration_seconds_count{route="/v1/recall",method="POST",status="200"}')).toBe(2);
    expect(metrics).toMatch(/^# TYPE elma_http_request_duration_seconds histogram$/m);
    expect(metrics).not.toContain('/v1/memories/mem_');
    expect(metrics).not.toContain('?');
  });

  it('counts errors by their problem code', () => {
    expect(sample(metrics, 'elma_http_errors_total{route="/v1/memories/:id",method="GET",status="404",code="MEMORY.NOT_FOUND"}')).toBe(1);
    expect(metrics).toMatch(/^elma_http_errors_total\{route="\/v1\/events",method="POST",status="422",code="[A-Z_]+\.[A-Z_.]+"\} 1$/m);
  });

  it('shows erasures by status and the duration of each erasure step', () => {
    expect(sample(metrics, 'elma_erasures{status="completed"}')).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'elma_erasures{status="failed"}')).toBe(0);
    for (const step of ['authorize', 'locate', 'closure', 'purge_index', 'shred_keys', 'delete_streams', 'verify', 'certify'])
      expect(sample(metrics, `elma_erasure_step_duration_seconds_count{step="${step}",outcome="ok"}`), step).toBeGreaterThanOrEqual(1);
  });

  it('shows projection and embedding lag, audit append latency and per-tenant counts by tenant id', () => {
    expect(sample(metrics, 'elma_projection_lag_events')).toBeGreaterThanOrEqual(0);
    expect(sample(metrics, 'elma_projection_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(metrics, 'elma_embedding_lag_records')).toBeGreaterThanOrEqual(0);
    expect(sample(metrics, 'elma_embedding_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(metrics, 'elma_audit_append_duration_seconds_count')).toBeGreaterThan(0);
    expect(sample(metrics, 'elma_audit_entries_total')).toBeGreaterThan(0);
    expect(sample(metrics, 'elma_tenant_requests_total{tenant="acme"}')).toBeGreaterThanOrEqual(8);
    // The families that existed before prom-client keep their names.
    expect(metrics).toMatch(/^# TYPE elma_admission_shed_total counter$/m);
    expect(sample(metrics, 'elma_admission_inflight{class="recall"}')).toBe(0);
  });

  it('holds no content, no subject id, no pseudonym and no token claim but the tenant', () => {
    for (const value of personal) expect(metrics, value).not.toContain(value);
    expect(metrics).not.toMatch(/psn_|sfp_|cpn_|era_/);
    // Every label name is one of ELMA's (or Node's process metrics'): none can carry a subject or a claim.
    const labels = new Set([...metrics.matchAll(/[{,]([a-z_]+)="/g)].map((m) => m[1]));
    const allowed = ['class', 'code', 'method', 'outcome', 'quota', 'route', 'status', 'step', 'tenant', 'le'];
    const processLabels = ['kind', 'type', 'space', 'version', 'major', 'minor', 'patch'];
    for (const label of labels) expect([...allowed, ...processLabels]).toContain(label);
  });
});

describe('the access log', () => {
  const requests = () => logged.filter((l) => l.message === 'request');

  it('has one line per request: request id, route template, method, status, duration, tenant and caller pseudonym', () => {
    const line = requests().find((l) => l.fields?.route === '/v1/memories/:id' && l.fields?.status === 200);
    expect(line?.level).toBe('info');
    expect(Object.keys(line!.fields!).sort()).toEqual(['caller', 'durationMs', 'method', 'requestId', 'route', 'status', 'tenant']);
    expect(line!.fields).toMatchObject({ method: 'GET', tenant: 'acme', caller: t.elma.callerPseudonym('acme', CALLER) });
    expect(line!.fields!.caller).toMatch(/^cpn_[0-9a-f]{20}$/);
    expect(typeof line!.fields!.durationMs).toBe('number');
    const ids = requests().map((l) => l.fields?.requestId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('names the problem code of an error and leaves the tenant out of an unauthenticated request', async () => {
    expect(requests().find((l) => l.fields?.status === 404 && l.fields?.route === '/v1/memories/:id')?.fields?.code).toBe(
      'MEMORY.NOT_FOUND',
    );
    const before = requests().length;
    expect((await fetch(`${t.url}/v1/memories/${memoryId}`)).status).toBe(401);
    await expect.poll(() => requests().length).toBe(before + 1);
    const anonymous = requests().at(-1)!.fields!;
    expect(anonymous).toMatchObject({ route: '/v1/memories/:id', status: 401, code: 'AUTH.UNAUTHENTICATED' });
    expect(anonymous).not.toHaveProperty('tenant');
    expect(anonymous).not.toHaveProperty('caller');
  });

  it('never holds content, a subject id, the caller, a URL or a query string', () => {
    const text = JSON.stringify(logged);
    for (const value of personal) expect(text, value).not.toContain(value);
    expect(text).not.toContain('?subject=');
  });
});
