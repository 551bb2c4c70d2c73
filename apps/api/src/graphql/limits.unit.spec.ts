import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { limitsRule } from './limits';

// The build mercurius validates with (see limits.ts).
const { buildSchema, parse, validate } = createRequire(import.meta.url)('graphql') as typeof import('graphql');

const schema = buildSchema(`
  type Query { recall(q: String): Result, node: Node }
  type Result { items: [Node] }
  type Node { id: String, child: Node }
`);

const codes = (query: string, limits = { maxDepth: 4, maxAliases: 3, maxCost: 250 }) =>
  validate(schema, parse(query), [limitsRule(limits)]).map((e) => e.extensions.code);

describe('the GraphQL request limits', () => {
  it('pass a request within every limit', () => {
    expect(codes('{ a: recall(q: "x") { items { id } } b: node { id } }')).toEqual([]);
  });

  it('count depth through fragments and inline fragments', () => {
    expect(codes('{ node { ...C } } fragment C on Node { child { child { ... on Node { child { id } } } } }')).toEqual([
      'GRAPHQL.DEPTH_LIMIT',
    ]);
  });

  it('do not count `ofType` as a level (introspection nests it without multiplying anything)', () => {
    const introspection = (ofTypes: number) =>
      `{ __schema { types { fields { type { ${'ofType { '.repeat(ofTypes)}name${' }'.repeat(ofTypes)} } } } } }`;
    const limits = { maxDepth: 5, maxAliases: 0, maxCost: 1000 };
    expect(codes(introspection(0), limits)).toEqual([]);
    expect(codes(introspection(7), limits)).toEqual([]);
  });

  it('count the aliases of a fragment once for every place it is spread, and once per selection set', () => {
    expect(codes('{ node { ...A } x: node { ...A } } fragment A on Node { a: id b: id }')).toEqual(['GRAPHQL.ALIAS_LIMIT']);
    expect(codes('{ node { ...A ...A ...A } } fragment A on Node { a: id b: id }')).toEqual([]);
  });

  it('cost an operation 100 and a field 1, at whatever depth a fragment puts it', () => {
    expect(codes('{ recall(q: "x") { items { id } } node { id } }')).toEqual([]);
    expect(codes('{ ...R } fragment R on Query { recall(q: "x") { items { id } } node { id } r: recall { items { id } } }')).toEqual([
      'GRAPHQL.COST_LIMIT',
    ]);
  });

  it('end on a fragment cycle (which the standard rules report)', () => {
    expect(codes('{ node { ...A } } fragment A on Node { child { ...B } } fragment B on Node { child { ...A } }')).toEqual([]);
  });
});
