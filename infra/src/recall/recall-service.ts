import {
  DomainError,
  RECALLABLE_STATUSES,
  RecallRequest,
  matchesFilter,
  orderForPrompt,
  packByMarginalUtility,
  packProfile,
  parseOrThrow,
  renderContext,
  type Clock,
  type Embedder,
  type IndexFilter,
  type MemoryIndex,
  type Principal,
  type RecallResult,
  type SearchHit,
  PolicyDenied,
  compileRead,
  matchesClauses,
  subjectOf,
} from '@elma/domain';
import type { ProjectionRunner } from '../projection/runner';
import type { WriteTracker } from '../projection/write-tracker';
import type { AuditLog } from '../audit/audit-log';
import type { LegalHolds } from '../legal-hold/legal-holds';
import type { PolicyStore } from '../policy/policy-store';
import { countTokens } from './token-counter';

export class PurposeNotPermitted extends DomainError {
  constructor(purpose: string) {
    super('RECALL.PURPOSE_NOT_PERMITTED', `the token does not permit the purpose ${purpose}`, { purpose });
  }
}

/** How many fused candidates recall considers before packing. */
const CANDIDATES = 30;
/**
 * A hit found only by the dense route must be at least this similar to the
 * query: the nearest neighbours of a query always exist, related or not, and
 * an unrelated memory in a context pack costs budget and misleads.
 */
const MIN_DENSE_ONLY_COSINE = 0.2;

/**
 * Recall (§5.3): policy compiled into the index filter (pushdown), hybrid
 * retrieval, a re-check of every hit (defence in depth), then budgeted packing
 * with citations.
 */
export class RecallService {
  constructor(
    private readonly deps: {
      index: MemoryIndex;
      embedder: Embedder;
      clock: Clock;
      runner: ProjectionRunner;
      writes: WriteTracker;
      policies: PolicyStore;
      holds: LegalHolds;
      audit: AuditLog;
    },
  ) {}

  async recall(principal: Principal, body: unknown, requestId = 'internal'): Promise<RecallResult> {
    const request = parseOrThrow(RecallRequest, body);
    const audit = (resourceIds: string[], decision: { effect: 'allow' | 'deny'; rule: string }) =>
      this.deps.audit.record({ tenant: principal.tenant, actor: principal.sub, subject: null, operation: 'read', resourceIds, decision, requestId });
    if (!principal.purposes.includes(request.purpose)) {
      await audit([], { effect: 'deny', rule: 'token-purposes' });
      throw new PurposeNotPermitted(request.purpose);
    }
    if (request.consistency === 'strong') {
      const own = this.deps.writes.lastWrite(principal) ?? -1n;
      const asked = request.afterPosition !== undefined ? BigInt(request.afterPosition) : -1n;
      await this.deps.runner.waitFor(own > asked ? own : asked);
    }
    const now = this.deps.clock.now();
    // The policy, compiled for this caller and purpose, goes into the index query (pushdown).
    const policy = await this.deps.policies.get(principal.tenant);
    const clauses = compileRead(policy, subjectOf(principal), { purpose: request.purpose, now: now.toISOString() });
    if (clauses.length === 0) {
      await audit([], { effect: 'deny', rule: 'default-deny' });
      throw new PolicyDenied('read');
    }
    const filter: IndexFilter = {
      kinds: request.kinds,
      statuses: RECALLABLE_STATUSES,
      maxSensitivity: principal.clearance,
      // Purpose limitation lives in the clauses: a rule may allow cross-purpose use.
      asOf: request.asOf ?? now.toISOString(),
      knownAsOf: request.knownAsOf,
      now: now.toISOString(),
      clauses,
      // Held records are withheld from everyone but the legal role.
      ...(principal.roles.includes('legal') ? {} : { exclude: await this.deps.holds.exclusions(principal.tenant) }),
    };
    const [vector] = await this.deps.embedder.embed([request.query]);
    const hits = (
      await this.deps.index.search({ tenant: principal.tenant, text: request.query, vector, limit: CANDIDATES, filter })
    ).filter(
      (hit) =>
        hit.record.tenant === principal.tenant &&
        matchesFilter(hit.record, filter) &&
        (hit.bm25Rank !== undefined || (hit.cosine ?? 0) >= MIN_DENSE_ONLY_COSINE),
    );
    const result = this.pack(hits, request, filter.asOf!);
    const recordOf = new Map(hits.map((hit) => [hit.record.id, hit.record]));
    const rules = new Set(result.items.map((item) => clauses.find((c) => matchesClauses(recordOf.get(item.id)!, [c]))!.ruleId));
    await audit(
      result.items.map((item) => item.id),
      { effect: 'allow', rule: [...rules].join(',') || clauses.map((c) => c.ruleId).join(',') },
    );
    return result;
  }

  /**
   * Packs within the budget with the purpose's weights, orders for the prompt
   * and renders the context. `at` is the query's point in business time.
   */
  private pack(hits: SearchHit[], request: RecallRequest, at: string): RecallResult {
    const top = Math.max(0, ...hits.map((hit) => hit.score));
    const byId = new Map(hits.map((hit) => [hit.record.id, hit]));
    const packed = packByMarginalUtility(
      hits.map((hit) => ({ record: hit.record, vector: hit.vector, relevance: top > 0 ? hit.score / top : 0 })),
      { budgetTokens: request.budgetTokens, at, countTokens, weights: packProfile(request.purpose) },
    );
    const ordered = orderForPrompt(packed, at);
    const items = ordered.map(({ record: r, tokens }) => ({
      id: r.id,
      kind: r.kind,
      text: r.content.text,
      score: byId.get(r.id)!.score,
      tokens,
      citation: {
        id: r.id,
        version: r.version,
        kind: r.kind,
        sourceEventIds: r.provenance.sourceEventIds,
        validFrom: r.validFrom,
        validTo: r.validTo,
        recordedAt: r.recordedAt,
        confidence: r.confidence,
        sourceTrust: r.sourceTrust,
        disputed: r.status === 'disputed',
      },
    }));
    const context = renderContext(ordered.map((p) => p.record));
    return {
      items,
      context,
      usedTokens: items.reduce((sum, item) => sum + item.tokens, 0),
      contextTokens: countTokens(context),
      budgetTokens: request.budgetTokens,
      candidates: hits.length,
    };
  }
}
