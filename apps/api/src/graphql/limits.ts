import { createRequire } from 'node:module';
import {
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/**
 * mercurius (CommonJS) validates with graphql's CommonJS build, while an ES
 * import loads its ES build: errors reported to its validation must be that
 * build's GraphQLError, or graphql refuses them as "from another realm".
 */
const { GraphQLError } = createRequire(import.meta.url)('graphql') as typeof import('graphql');

/** What one request may ask for; see ELMA_GRAPHQL_MAX_* in the configuration. */
export interface GraphqlLimits {
  maxDepth: number;
  maxAliases: number;
  maxCost: number;
}

/** A root field runs a use case (a recall, an ingest); every other field only shapes its answer. */
export const OPERATION_COST = 100;
const FIELD_COST = 1;

interface Measure {
  depth: number;
  aliases: number;
  cost: number;
}

/**
 * Measures a selection set with its fragments expanded where they are spread,
 * since a fragment spread in ten places runs ten times. `ofType` is not a level:
 * it unwraps one type reference and multiplies nothing, and introspection
 * queries nest it seven deep. A fragment cycle measures as empty (the
 * standard rules report the cycle itself).
 */
function measure(
  selectionSet: SelectionSetNode,
  fragment: (name: string) => FragmentDefinitionNode | undefined,
  root: boolean,
  expanding: Set<string>,
  memo: Map<string, Measure>,
): Measure {
  const total: Measure = { depth: 0, aliases: 0, cost: 0 };
  const add = (m: Measure, depth: number) => {
    total.depth = Math.max(total.depth, depth);
    total.aliases += m.aliases;
    total.cost += m.cost;
  };
  // Spreading one fragment twice in a selection set selects its fields once (they merge by response key).
  const spread = new Set<string>();
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      const inner = selection.selectionSet
        ? measure(selection.selectionSet, fragment, false, expanding, memo)
        : { depth: 0, aliases: 0, cost: 0 };
      const introspection = selection.name.value.startsWith('__');
      const own = { depth: 0, aliases: selection.alias ? 1 : 0, cost: root && !introspection ? OPERATION_COST : FIELD_COST };
      add(
        { depth: 0, aliases: own.aliases + inner.aliases, cost: own.cost + inner.cost },
        inner.depth + (selection.name.value === 'ofType' ? 0 : 1),
      );
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const inner = measure(selection.selectionSet, fragment, root, expanding, memo);
      add(inner, inner.depth);
    } else {
      const name = selection.name.value;
      const definition = fragment(name);
      if (!definition || expanding.has(name) || spread.has(name)) continue;
      spread.add(name);
      // Memoised per root-ness: the same fragment costs more at the root, where its fields are operations.
      const key = `${root ? 'root' : 'inner'}:${name}`;
      let inner = memo.get(key);
      if (!inner) {
        expanding.add(name);
        inner = measure(definition.selectionSet, fragment, root, expanding, memo);
        expanding.delete(name);
        memo.set(key, inner);
      }
      add(inner, inner.depth);
    }
  }
  return total;
}

/** The measure of every operation of the document together: whichever operation runs, none may exceed a limit. */
function documentMeasure(context: ValidationContext): Measure {
  const memo = new Map<string, Measure>();
  const total: Measure = { depth: 0, aliases: 0, cost: 0 };
  for (const definition of context.getDocument().definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const m = measure(definition.selectionSet, (name) => context.getFragment(name) ?? undefined, true, new Set(), memo);
    total.depth = Math.max(total.depth, m.depth);
    total.aliases += m.aliases;
    total.cost += m.cost;
  }
  return total;
}

const limitError = (code: string, message: string) => new GraphQLError(message, { extensions: { code } });

/**
 * A validation rule bounding the work one request can ask for: nesting depth,
 * aliases (how one request repeats an expensive field) and total cost. It runs
 * with GraphQL's standard rules, before any resolver, for callers with a
 * token and without one alike.
 */
export function limitsRule(limits: GraphqlLimits): ValidationRule {
  return (context): ASTVisitor => ({
    Document: {
      leave() {
        const m = documentMeasure(context);
        if (m.depth > limits.maxDepth) {
          context.reportError(
            limitError('GRAPHQL.DEPTH_LIMIT', `the query nests ${m.depth} levels; at most ${limits.maxDepth} are allowed`),
          );
        }
        if (m.aliases > limits.maxAliases) {
          context.reportError(
            limitError('GRAPHQL.ALIAS_LIMIT', `the request uses ${m.aliases} aliases; at most ${limits.maxAliases} are allowed`),
          );
        }
        if (m.cost > limits.maxCost) {
          context.reportError(
            limitError(
              'GRAPHQL.COST_LIMIT',
              `the request costs ${m.cost} (${OPERATION_COST} an operation, ${FIELD_COST} a field); at most ${limits.maxCost} is allowed`,
            ),
          );
        }
      },
    },
  });
}
