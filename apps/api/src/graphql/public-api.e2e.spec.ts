import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { e2eIndex, recordingLogger, startTestApp, type Json, type TestApp } from '../testing';

/**
 * GraphQL as a public API: client errors are client errors with stable
 * codes, in the GraphQL response format, and log nothing at error level;
 * limits bound what one request can ask for.
 */
let t: TestApp;
let token: string;
const { logger, lines, errors: errorLines } = recordingLogger();

beforeAll(async () => {
  t = await startTestApp({ logger });
  token = await t.token();
});
afterAll(async () => t?.close());
beforeEach(() => void lines.splice(0));

const MARKER = 'zq7marker';

async function gql(body: unknown, options: { token?: string; accept?: string; method?: string; query?: string } = {}) {
  const response = await fetch(`${t.url}/graphql${options.query ?? ''}`, {
    method: options.method ?? 'POST',
    headers: {
      ...(options.method === 'GET' ? {} : { 'content-type': 'application/json' }),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.accept ? { accept: options.accept } : {}),
    },
    body: options.method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: Json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, body: json, contentType: response.headers.get('content-type') ?? '', headers: response.headers };
}

const codes = (body: { errors?: { extensions?: { code?: string } }[] }) => (body.errors ?? []).map((e) => e.extensions?.code);
const recallAliases = (n: number) =>
  `{ ${Array.from({ length: n }, (_, i) => `r${i}: recall(input: {query: "lease", purpose: "support"}) { recallId }`).join(' ')} }`;

describe('GraphQL client errors', () => {
  it.each([
    ['an unknown field', { query: `{ ${MARKER} }` }, 'GRAPHQL.VALIDATION_FAILED'],
    ['a document that does not parse', { query: `{ memory(id: "${MARKER}"` }, 'GRAPHQL.PARSE_FAILED'],
    [
      'an unknown input field',
      { query: `{ recall(input: {query: "x", purpose: "support", ${MARKER}: 1}) { recallId } }` },
      'GRAPHQL.VALIDATION_FAILED',
    ],
    [
      'variables that do not coerce',
      {
        query: 'query Q($input: RecallInput!) { recall(input: $input) { recallId } }',
        variables: { input: { query: MARKER, purpose: 'support', budgetTokens: MARKER } },
      },
      'GRAPHQL.BAD_USER_INPUT',
    ],
  ])('%s is a request error with its GraphQL code, no data, no echo and no error log', async (_label, body, code) => {
    for (const caller of [undefined, token]) {
      const response = await gql(body, { token: caller });
      expect(response.status, response.text).toBe(200);
      expect(codes(response.body)).toContain(code);
      expect(response.body.errors.every((e: { extensions: { status: number } }) => e.extensions.status === 400)).toBe(true);
      // GraphQL spec, Response: an error raised before execution begins leaves no `data` entry.
      expect(response.body).not.toHaveProperty('data');
      expect(response.text).not.toContain(MARKER);
    }
    expect(errorLines()).toEqual([]);
  });

  it('answers 400 with the GraphQL media type to a client that accepts it', async () => {
    const response = await gql({ query: '{ nope }' }, { accept: 'application/graphql-response+json' });
    expect(response.status).toBe(400);
    expect(response.contentType).toContain('application/graphql-response+json');
    expect(codes(response.body)).toEqual(['GRAPHQL.VALIDATION_FAILED']);
    const ok = await gql({ query: '{ __typename }' }, { accept: 'application/graphql-response+json' });
    expect([ok.status, ok.contentType.split(';')[0], ok.body]).toEqual([
      200,
      'application/graphql-response+json',
      { data: { __typename: 'Query' } },
    ]);
  });

  it.each([
    ['a batched array', [{ query: '{ __typename }' }, { query: '{ __typename }' }]],
    ['no query', {}],
    ['a body that is not JSON', `{"query": "${MARKER}`],
  ])('refuses %s with 400 and a code, without running anything', async (_label, body) => {
    const response = await gql(body);
    expect(response.status, response.text).toBe(400);
    expect(codes(response.body)[0]).toMatch(/^(GRAPHQL\.BAD_REQUEST|REQUEST\.MALFORMED_JSON)$/);
    expect(response.body).not.toHaveProperty('data');
    expect(response.text).not.toContain(MARKER);
    expect(errorLines()).toEqual([]);
  });

  it('answers a mutation sent with GET with 405 and Allow: POST', async () => {
    const query = encodeURIComponent('mutation { recallFeedback(recallId: "r", adopted: ["m"]) { __typename } }');
    const response = await gql(undefined, { method: 'GET', query: `?query=${query}` });
    expect(response.status, response.text).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(codes(response.body)).toEqual(['GRAPHQL.METHOD_NOT_ALLOWED']);
  });

  it('keeps domain errors as field errors with the REST code, data present', async () => {
    const missing = await gql({ query: '{ memory(id: "mem_ep_nope") { id } }' }, { token });
    expect(missing.status).toBe(200);
    expect(missing.body.data).toBeNull();
    expect(missing.body.errors[0]).toMatchObject({ path: ['memory'], extensions: { code: 'MEMORY.NOT_FOUND', status: 404 } });
    const anonymous = await gql({ query: '{ memory(id: "mem_ep_nope") { id } }' });
    expect(anonymous.body.errors[0].extensions).toMatchObject({ code: 'AUTH.UNAUTHENTICATED', status: 401 });
    expect(errorLines()).toEqual([]);
  });
});

describe('GraphQL limits', () => {
  it('refuses 100 aliased recalls before running any, with or without a token', async () => {
    for (const caller of [undefined, token]) {
      const response = await gql({ query: recallAliases(100) }, { token: caller });
      expect(response.status).toBe(200);
      expect(codes(response.body)).toEqual(expect.arrayContaining(['GRAPHQL.ALIAS_LIMIT', 'GRAPHQL.COST_LIMIT']));
      expect(response.body).not.toHaveProperty('data');
    }
    // Nothing ran: no recall was recorded in the audit trail, and nothing was logged at error level.
    expect(errorLines()).toEqual([]);
  });

  it('counts aliases and cost inside fragments, as often as they are spread', async () => {
    const fragment = `fragment F on Query { ${Array.from({ length: 4 }, (_, i) => `f${i}: __typename`).join(' ')} }`;
    const spreads = Array.from({ length: 5 }, (_, i) => `s${i}: __schema { queryType { name } } ...F`).join(' ');
    const response = await gql({ query: `{ ${spreads} } ${fragment}` });
    // 5 aliases of its own and 4 in F, counted once: one selection set merges the five spreads.
    expect(codes(response.body)).toEqual([]);
    const nested = await gql({
      query: `{ a: __schema { ...G } b: __schema { ...G } c: __schema { ...G } d: __schema { ...G } } fragment G on __Schema { ${Array.from({ length: 4 }, (_, i) => `g${i}: queryType { name }`).join(' ')} }`,
    });
    expect(codes(nested.body)).toEqual(['GRAPHQL.ALIAS_LIMIT']);
  });

  it('refuses a query nested deeper than the limit, and accepts an introspection query', async () => {
    const deep =
      '{ __schema { types { fields { type { fields { type { fields { type { fields { type { fields { name } } } } } } } } } } } }';
    const response = await gql({ query: deep });
    expect(codes(response.body)).toContain('GRAPHQL.DEPTH_LIMIT');
    const { getIntrospectionQuery } = await import('graphql');
    const introspection = await gql({ query: getIntrospectionQuery() });
    expect(introspection.body.errors, introspection.text.slice(0, 300)).toBeUndefined();
    expect(introspection.body.data.__schema.queryType.name).toBe('Query');
  });

  it('takes its limits from the configuration', async () => {
    const strict = await startTestApp({
      env: { ELMA_GRAPHQL_MAX_ALIASES: '1', ELMA_GRAPHQL_MAX_DEPTH: '2', ELMA_GRAPHQL_MAX_COST: '150' },
    });
    try {
      const call = async (query: string) =>
        codes(
          (await fetch(`${strict.url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query }),
          }).then((r) => r.json())) as never,
        );
      expect(await call('{ a: __typename b: __typename }')).toEqual(['GRAPHQL.ALIAS_LIMIT']);
      expect(await call('{ __schema { queryType { fields { name } } } }')).toEqual(['GRAPHQL.DEPTH_LIMIT']);
      expect(await call(recallAliases(1).replace('r0: ', '') + '')).toEqual(['AUTH.UNAUTHENTICATED']);
      expect(await call('{ memory(id: "a") { id } recall(input: {query: "x", purpose: "support"}) { recallId } }')).toEqual([
        'GRAPHQL.COST_LIMIT',
      ]);
    } finally {
      await strict.close();
    }
  });
});

describe('the GraphQL explorer', () => {
  // On by default in the embedded mode only: with the index on Elasticsearch (a production engine) it is off
  // unless turned on, so the page is checked on an app that turns it on.
  let explorer: TestApp;
  beforeAll(async () => {
    explorer = e2eIndex === 'sqlite' ? t : await startTestApp({ env: { ELMA_GRAPHIQL: 'true' } });
  });
  afterAll(async () => {
    if (explorer && explorer !== t) await explorer.close();
  });

  it.runIf(e2eIndex === 'elasticsearch')(
    'is off by default with a production engine (runs with the index on Elasticsearch only)',
    async () => {
      expect((await fetch(`${t.url}/graphiql`)).status).toBe(404);
    },
  );

  it(`is served, self-contained, when a browser opens /graphql ${e2eIndex === 'sqlite' ? 'in the embedded mode' : 'with it turned on'}`, async () => {
    for (const path of ['/graphql', '/graphiql']) {
      const response = await fetch(`${explorer.url}${path}`, { headers: { accept: 'text/html,application/xhtml+xml' } });
      const html = await response.text();
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/html');
      expect(html).toContain('<title>ELMA GraphQL explorer</title>');
      // Offline: no script, style or font from another origin.
      expect(html).not.toMatch(/(src|href)=["']?https?:/);
      expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    }
  });

  it('is GraphiQL, with every script and style the page names served by ELMA itself', async () => {
    const html = await (await fetch(`${explorer.url}/graphiql`)).text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map(([, path]) => path);
    expect(assets).toEqual(
      expect.arrayContaining(['/graphiql/assets/react.js', '/graphiql/assets/graphiql.js', '/graphiql/assets/graphiql.css']),
    );
    for (const path of assets) {
      const asset = await fetch(`${explorer.url}${path}`);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('content-type'), path).toMatch(path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect((await asset.text()).length, path).toBeGreaterThan(0);
    }
    expect(await (await fetch(`${explorer.url}/graphiql/assets/graphiql.js`)).text()).toContain('GraphiQL');
    expect((await fetch(`${explorer.url}/graphiql/assets/nothing.js`)).status).toBe(404);
  });

  it('is not served when turned off; a browser then gets a client error', async () => {
    const off = await startTestApp({ env: { ELMA_GRAPHIQL: 'false' } });
    try {
      const page = await fetch(`${off.url}/graphiql`);
      expect(page.status).toBe(404);
      const browser = await fetch(`${off.url}/graphql`, { headers: { accept: 'text/html' } });
      expect(browser.status).toBe(400);
      expect(((await browser.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe(
        'GRAPHQL.BAD_REQUEST',
      );
    } finally {
      await off.close();
    }
  });
});

describe('GraphQL server faults', () => {
  it('are SERVER.INTERNAL with the request id, logged at error level with a cause and no input', async () => {
    const original = t.elma.memories.get.bind(t.elma.memories);
    t.elma.memories.get = async () => {
      throw new TypeError(`cannot read ${MARKER}`);
    };
    try {
      const response = await gql({ query: `{ memory(id: "mem_ep_${MARKER}") { id } }` }, { token });
      expect(response.status).toBe(200);
      const error = response.body.errors[0];
      expect(error.extensions).toMatchObject({ code: 'SERVER.INTERNAL', status: 500 });
      expect(error.extensions.requestId).toMatch(/^req-/);
      expect(response.text).not.toContain(`cannot read ${MARKER}`);
      expect(errorLines()).toHaveLength(1);
      const [line] = errorLines();
      expect(line.fields).toMatchObject({ api: 'graphql', requestId: error.extensions.requestId, name: 'TypeError', field: 'memory' });
      expect(line.fields?.at).toMatch(/public-api\.e2e\.spec\.ts:\d+:\d+$/);
      expect(JSON.stringify(line)).not.toContain(MARKER);
    } finally {
      t.elma.memories.get = original;
    }
  });
});
