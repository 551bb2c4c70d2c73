import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatEvent, recordingLogger, startTestApp, type TestApp } from '../testing';
import { RedTeam, pool, type ProbeRequest, type Secret } from './harness';

/**
 * Red team, GraphQL: malformed documents, batches, alias, depth and fragment
 * bombs, with and without a token. Nothing may answer 5xx, echo what was
 * sent, leak another tenant's record, or write a line at error level (an
 * anonymous caller must not be able to flood the error log).
 */
let t: TestApp;
let red: RedTeam;
let secret: Secret;
const echoes: string[] = [];
/** GraphQL answers a fault with HTTP 200 and a 5xx status in `extensions`: counted here, as the harness counts HTTP 5xx. */
const faults: string[] = [];
const { logger, errors: errorLines } = recordingLogger();

beforeAll(async () => {
  t = await startTestApp({ logger });
  red = new RedTeam(t, 'graphql');
  const writer = await red.token('globex', 'writer', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
  const marker = `canaryglobex${Math.random().toString(36).slice(2, 8)}`;
  const written = await red.send({
    token: writer,
    method: 'POST',
    path: '/v1/events',
    body: chatEvent('cust-g', `Lease renewal ${marker} for the harbour office`),
  });
  expect(written.status, written.text).toBe(202);
  secret = { id: `mem_ep_${(JSON.parse(written.text) as { events: { id: string }[] }).events[0].id}`, marker, label: 'globex canary' };
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
}, 120_000);

afterAll(async () => {
  await (red ? red.close() : t?.close());
});

/** A probe whose input carries `echo`: the answer must not contain it. */
async function probe(label: string, request: ProbeRequest, echo: string) {
  const result = await red.probe(label, request, [secret]);
  if (result.text.includes(echo)) echoes.push(`${label}: HTTP ${result.status} ${result.text.slice(0, 200)}`);
  if (/"status":5\d\d|"code":"(SERVER\.)?INTERNAL"/.test(result.text)) faults.push(`${label}: ${result.text.slice(0, 200)}`);
  return result;
}

const gql = (token: string | undefined, body: unknown, headers?: Record<string, string>): ProbeRequest => ({
  token,
  method: 'POST',
  path: '/graphql',
  body,
  headers,
});

function documents(m: string): [string, unknown][] {
  const aliases = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `${m}${i}: ${field}`).join(' ')} }`;
  const nest = (n: number) => `{ __schema { ${'types { fields { type { '.repeat(n)}name${' } } }'.repeat(n)} } }`;
  return [
    ['unknown field', { query: `{ ${m} }` }],
    ['unclosed brace', { query: `{ memory(id: "${m}"` }],
    ['lone brace', { query: '{' }],
    ['empty document', { query: '' }],
    ['not a string', { query: { [m]: 1 } }],
    ['no query', { [m]: true }],
    ['batched array', [{ query: `{ ${m} }` }, { query: '{ __typename }' }]],
    ['unknown input field', { query: `{ recall(input: {query: "x", purpose: "support", ${m}: 1}) { recallId } }` }],
    ['wrong input type', { query: `{ recall(input: {query: 7, purpose: "support", budgetTokens: "${m}"}) { recallId } }` }],
    [
      'variables that do not coerce',
      {
        query: 'query Q($i: RecallInput!) { recall(input: $i) { recallId } }',
        variables: { i: { query: m, purpose: 'support', hops: m, [m]: m } },
      },
    ],
    ['variables not an object', { query: '{ __typename }', variables: m }],
    ['unknown operation name', { query: '{ __typename }', operationName: m }],
    ['two anonymous operations', { query: `{ __typename } { ${m}: __typename }` }],
    ['fragment cycle', { query: `{ ...A } fragment A on Query { ...B } fragment B on Query { ...A ${m}: __typename }` }],
    ['undefined variable', { query: `{ memory(id: $${m}) { id } }` }],
    ['control characters', { query: `{ \u0001${m} }` }],
    ['huge string literal', { query: `{ memory(id: "${m}${'x'.repeat(200_000)}") { id } }` }],
    ['100 aliased recalls', { query: aliases(100, 'recall(input: {query: "lease", purpose: "support"}) { recallId items { id text } }') }],
    ['1000 aliased typenames', { query: aliases(1000, '__typename') }],
    ['deep introspection', { query: nest(8) }],
    [
      'fragment bomb',
      {
        query: `{ ...F0 } ${Array.from({ length: 12 }, (_, i) => `fragment F${i} on Query { a${i}: __schema { queryType { name } } ${i < 11 ? `...F${i + 1}` : ''} }`).join(' ')} # ${m}`,
      },
    ],
    [
      'mutations in one request',
      {
        query: `mutation { ${Array.from({ length: 20 }, (_, i) => `${m}${i}: recallFeedback(recallId: "r${i}", adopted: ["x"]) { adopted }`).join(' ')} }`,
      },
    ],
    ['directive abuse', { query: `{ __typename ${'@include(if: true) '.repeat(500)} } # ${m}` }],
  ];
}

describe('GraphQL under hostile documents', () => {
  it('answers every malformed or oversized request with a client error: no 5xx, no echo, no leak, no error log', async () => {
    const agent = await red.token('acme', 'agent', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    const tasks: (() => Promise<unknown>)[] = [];
    for (const [who, token] of [
      ['anonymous', undefined],
      ['forged', 'eyJhbGciOiJub25lIn0.e30.'],
      ['agent', agent],
    ] as const) {
      for (const accept of [undefined, 'application/graphql-response+json']) {
        for (let round = 0; round < 3; round++) {
          const m = `zq${who}${round}${accept ? 'g' : 'j'}mk`;
          for (const [label, body] of documents(m)) {
            tasks.push(() => probe(`${label}/${who}`, gql(token, body, accept ? { accept } : undefined), m));
          }
          tasks.push(() =>
            probe(`GET without query/${who}`, { token, method: 'GET', path: `/graphql?${m}=1`, headers: { accept: 'text/html' } }, m),
          );
          tasks.push(() =>
            probe(`GET variables not JSON/${who}`, { token, method: 'GET', path: `/graphql?query=%7B__typename%7D&variables=%7B${m}` }, m),
          );
          tasks.push(() =>
            probe(
              `GET mutation/${who}`,
              {
                token,
                method: 'GET',
                path: `/graphql?query=${encodeURIComponent(`mutation { ${m}: recallFeedback(recallId: "r", adopted: ["x"]) { adopted } }`)}`,
              },
              m,
            ),
          );
          tasks.push(() => probe(`body not JSON/${who}`, gql(token, `{"query": "${m}`), m));
        }
      }
    }
    await pool(tasks, 4, (task) => task());
    expect(red.probes).toBeGreaterThan(400);
    expect(red.serverErrors).toEqual([]);
    expect(faults).toEqual([]);
    expect(red.leaks).toEqual([]);
    expect(echoes).toEqual([]);
    expect(errorLines()).toEqual([]);
  });

  it('runs no resolver for a refused bomb: 100 aliased recalls record no recall', async () => {
    const agent = await red.token('acme', 'agent', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
    const before = await t.elma.log.headPosition();
    const bomb = `{ ${Array.from({ length: 100 }, (_, i) => `r${i}: recall(input: {query: "lease", purpose: "support"}) { recallId }`).join(' ')} }`;
    const result = await probe('100 aliased recalls, counted', gql(agent, { query: bomb }), 'never-echoed');
    const body = JSON.parse(result.text) as { data?: unknown; errors: { extensions: { code: string } }[] };
    expect(body.data).toBeUndefined();
    expect(body.errors.map((e) => e.extensions.code)).toContain('GRAPHQL.ALIAS_LIMIT');
    // A recall writes an audit entry; a refused request wrote nothing.
    expect(await t.elma.log.headPosition()).toBe(before);
  });
});
