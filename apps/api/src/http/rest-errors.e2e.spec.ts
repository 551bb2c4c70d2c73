import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '@elma/domain';
import { policyStream } from '@elma/application';
import { callApi, chatEvent, recordingLogger, startTestApp, type TestApp } from '../testing';

/**
 * Every REST error, from whichever layer refuses the request (Node's HTTP
 * parser, Fastify's router and body parser, Nest, the services), is
 * problem+json with a stable code, echoes nothing of the request, and logs
 * nothing at error level.
 */
let t: TestApp;
let admin: string;
const MARKER = 'zq7marker';
const { logger, lines, errors: errorLines } = recordingLogger();

beforeAll(async () => {
  t = await startTestApp({ logger });
  admin = await t.token({ roles: ['admin'] });
});
afterAll(async () => t?.close());
beforeEach(() => void lines.splice(0));

/** One raw HTTP exchange, for what fetch will not send (huge headers, a malformed request line). */
function raw(request: string): Promise<{ status: number; headers: string; body: string }> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(request));
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('utf8')));
    socket.on('error', (error) => (data ? undefined : reject(error)));
    socket.on('close', () => {
      const [head, ...rest] = data.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head, body: rest.join('\r\n\r\n') });
    });
  });
}

async function expectProblem(response: { status: number; contentType: string; text: string }, status: number, code: string) {
  expect(response.status, response.text).toBe(status);
  expect(response.contentType).toContain('application/problem+json');
  const problem = JSON.parse(response.text);
  expect(problem).toMatchObject({ status, code });
  expect(response.text).not.toContain(MARKER);
}

describe('errors of every layer are problem+json and echo no input', () => {
  it('a route that does not exist: 404, without the path', async () => {
    const response = await callApi(t.url, admin, 'GET', `/v1/${MARKER}/x`);
    await expectProblem(response, 404, 'ROUTE.NOT_FOUND');
  });

  it('a method the route does not answer: 405 with Allow', async () => {
    const response = await fetch(`${t.url}/v1/events`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } });
    await expectProblem(
      { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() },
      405,
      'ROUTE.METHOD_NOT_ALLOWED',
    );
    expect(response.headers.get('allow')).toBe('POST');
  });

  it('a path parameter longer than the router keeps: 414, without the path', async () => {
    const response = await callApi(t.url, admin, 'GET', `/v1/memories/${MARKER}${'x'.repeat(300)}`);
    await expectProblem(response, 414, 'REQUEST.URI_TOO_LONG');
  });

  it('a URL that is not validly encoded: 400, without the path', async () => {
    const response = await callApi(t.url, admin, 'GET', `/v1/memories/${MARKER}%E0%A4%A`);
    await expectProblem(response, 400, 'REQUEST.MALFORMED');
  });

  it('headers larger than the HTTP parser takes: 431 problem+json', async () => {
    const response = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${MARKER}${'z'.repeat(40_000)}\r\n\r\n`);
    expect(response.status).toBe(431);
    expect(response.headers).toMatch(/content-type: application\/problem\+json/i);
    expect(JSON.parse(response.body)).toMatchObject({ status: 431, code: 'REQUEST.HEADERS_TOO_LARGE' });
    expect(response.body).not.toContain(MARKER);
  });

  it('a URL longer than the HTTP parser takes: 431 problem+json, without the URL', async () => {
    const response = await raw(`GET /v1/memories/${MARKER}${'y'.repeat(40_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(response.status).toBe(431);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'REQUEST.HEADERS_TOO_LARGE' });
    expect(response.body).not.toContain(MARKER);
  });

  it('a request that is not HTTP: 400 problem+json', async () => {
    const response = await raw(`${MARKER} NONSENSE\r\n\r\n`);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({ status: 400, code: 'REQUEST.MALFORMED' });
    expect(response.body).not.toContain(MARKER);
  });

  it('a body that is not JSON, of another media type, or too large', async () => {
    const post = async (body: string, contentType: string) => {
      const response = await fetch(`${t.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': contentType },
        body,
      });
      return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
    };
    await expectProblem(await post(`{"events": [${MARKER}`, 'application/json'), 400, 'REQUEST.MALFORMED_JSON');
    await expectProblem(await post(MARKER, 'application/xml'), 415, 'REQUEST.UNSUPPORTED_MEDIA_TYPE');
    await expectProblem(await post(JSON.stringify({ pad: MARKER.repeat(200_000) }), 'application/json'), 413, 'REQUEST.PAYLOAD_TOO_LARGE');
  });

  it('none of these is logged at error level', async () => {
    await callApi(t.url, admin, 'GET', `/v1/${MARKER}`);
    await callApi(t.url, admin, 'GET', `/v1/memories/${'x'.repeat(300)}`);
    await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'z'.repeat(40_000)}\r\n\r\n`);
    expect(errorLines()).toEqual([]);
  });
});

describe('a policy that cannot be applied', () => {
  it('is refused with 422 and the path of each number out of bounds, and ingest keeps working', async () => {
    const tenant = `bounds${randomUUID().slice(0, 8)}`;
    const tenantAdmin = await t.token({ tenant, roles: ['admin'] });
    const agent = await t.token({ tenant });
    const { version: _v, ...document } = DEFAULT_POLICY;
    for (const [path, patch] of [
      ['retentionDays.standard', { retentionDays: { ...document.retentionDays, standard: 1e8 } }],
      ['retentionDays.session', { retentionDays: { ...document.retentionDays, session: -1 } }],
      ['erasure.approvalThreshold', { erasure: { ...document.erasure, approvalThreshold: 1e12 } }],
    ] as const) {
      const response = await callApi(t.url, tenantAdmin, 'PUT', '/v1/policy', { ...document, ...patch });
      expect(response.status, response.text).toBe(422);
      expect(response.body.code).toBe('REQUEST.VALIDATION_FAILED');
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
    }
    const ingest = await callApi(t.url, agent, 'POST', '/v1/events', chatEvent('cust-1', 'the lease renews in March'));
    expect(ingest.status, ingest.text).toBe(202);
  });

  it('refuses an expectedVersion that is not a version with 422 naming it', async () => {
    const { version: _v, ...document } = DEFAULT_POLICY;
    for (const expected of ['abc', '1e400', '-1']) {
      const response = await callApi(t.url, admin, 'PUT', `/v1/policy?expectedVersion=${expected}`, document);
      expect(response.status, response.text).toBe(422);
      expect(response.body.errors[0].path).toBe('expectedVersion');
    }
  });

  it('a policy stored before the bounds is read clamped, so the tenant keeps working', async () => {
    const tenant = `legacy${randomUUID().slice(0, 8)}`;
    await t.elma.log.append(
      policyStream(tenant),
      [
        {
          id: randomUUID(),
          type: 'PolicyChanged',
          data: { policy: { ...DEFAULT_POLICY, version: 2, retentionDays: { ...DEFAULT_POLICY.retentionDays, standard: 1e8 } } },
          metadata: { tenant, actor: 'before-the-bounds' },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    const ingest = await callApi(t.url, await t.token({ tenant }), 'POST', '/v1/events', chatEvent('cust-1', 'the lease renews in March'));
    expect(ingest.status, ingest.text).toBe(202);
    const policy = await callApi(t.url, await t.token({ tenant, roles: ['admin'] }), 'GET', '/v1/policy');
    expect(policy.body.retentionDays.standard).toBe(36_500);
  });
});
