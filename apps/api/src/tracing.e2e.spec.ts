import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from '@elma/infra';
import { callApi, chatEvent, roleTokens, startTestApp, type TestApp } from './testing';

/**
 * OpenTelemetry traces on (as ELMA_OTEL_ENDPOINT turns them on, with an
 * in-memory exporter in place of OTLP): a request that starts an erasure is
 * one trace through the API, the services, the Temporal client, the workflow
 * and its activities, and no span attribute holds the subject or the content.
 */
const SUBJECT = 'cust-trace-李娜';
const CONTENT_EN = 'Leontyne Abernethy hides the safe key inside the grandfather clock';
const CONTENT_ZH = '李娜把保险箱钥匙藏在落地钟里';

let t: TestApp;
let tracing: Tracing;
const exporter = new InMemorySpanExporter();
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
let spans: ReadableSpan[];

beforeAll(async () => {
  tracing = await startTracing({ serviceName: 'elma-test', exporter });
  // The test app bundles the workflows now, with tracing on: the bundle carries the workflow interceptors.
  t = await startTestApp({ temporal: {} });
  Object.assign(tokens, await roleTokens(t, ['agent', 'compliance']));
  const ingested = await call('agent', 'POST', '/v1/events', { events: [chatEvent(SUBJECT, CONTENT_EN), chatEvent(SUBJECT, CONTENT_ZH)] });
  expect(ingested.status, ingested.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  const requested = await call('compliance', 'POST', '/v1/erasures', {
    scope: { type: 'subject', subject: SUBJECT },
    reason: 'subject_request',
  });
  expect(requested.status, requested.text).toBe(202);
  for (let i = 0; i < 600; i++) {
    const progress = await call('compliance', 'GET', `/v1/erasures/${requested.body.requestId}`);
    if (progress.body?.status === 'completed') break;
    expect(['running', 'awaiting_approval']).toContain(progress.body?.status);
    await new Promise((r) => setTimeout(r, 100));
  }
  await tracing.flush();
  spans = exporter.getFinishedSpans();
}, 180_000);
afterAll(async () => {
  await t?.close();
  await tracing?.shutdown();
});

describe('traces, when turned on', () => {
  it('connect the request that starts an erasure to the services, the workflow and every step activity', () => {
    const request = spans.find((s) => s.name === 'POST /v1/erasures');
    expect(request, spans.map((s) => s.name).join(', ')).toBeDefined();
    expect(request!.attributes).toMatchObject({ 'http.route': '/v1/erasures', 'http.response.status_code': 202 });
    const trace = spans.filter((s) => s.spanContext().traceId === request!.spanContext().traceId);
    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    /** The names from a span up to the root of its trace. */
    const ancestry = (span: ReadableSpan): string[] => {
      const names = [span.name];
      for (let parent = span.parentSpanId; parent && byId.has(parent); parent = byId.get(parent)!.parentSpanId)
        names.push(byId.get(parent)!.name);
      return names;
    };
    const names = trace.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(['erasure_desk.create', 'erasure_requests.request']));
    for (const activity of ['erasureAuthorize', 'erasurePurgeIndex', 'erasureShredKeys', 'erasureVerify', 'erasureCertify']) {
      const run = trace.find((s) => s.name === `RunActivity:${activity}`);
      expect(run, `${activity} in ${names.join(', ')}`).toBeDefined();
      const chain = ancestry(run!);
      // Every step goes back, span by span, to the API request: workflow, client start, desk, request.
      expect(chain.at(-1)).toBe('POST /v1/erasures');
      expect(chain).toEqual(
        expect.arrayContaining(['RunWorkflow:erasureWorkflow', 'StartWorkflow:erasureWorkflow', 'erasure_desk.create']),
      );
    }
  });

  it('hold no subject id and no content in any span', () => {
    expect(spans.length).toBeGreaterThan(10);
    const text = JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })));
    for (const value of [SUBJECT, '李娜', 'Leontyne', 'Abernethy', 'grandfather', '保险箱', 'agent-1', 'compliance-1'])
      expect(text, value).not.toContain(value);
  });
});
