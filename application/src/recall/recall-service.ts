import {
  ROLES,
  DomainError,
  HOP_DECAY,
  MemoryKind,
  RECALLABLE_STATUSES,
  RecallFeedback,
  RecallRequest,
  scopeOf,
  ValidationFailed,
  matchesFilter,
  orderForPrompt,
  packByMarginalUtility,
  packByScore,
  packProfile,
  rankByMarginalUtility,
  parseOrThrow,
  renderContext,
  renderPlain,
  type Clock,
  type Embedder,
  type EvidenceSteps,
  type Fusion,
  DEFAULT_SMOOTHING_FACTOR,
  type IndexFilter,
  type MemoryIndex,
  type Principal,
  type RecallResult,
  type SearchHit,
  PolicyDenied,
  compileRead,
  entityToken,
  followEdges,
  latestProcedureVersions,
  matchesClauses,
  subjectOf,
  visibleInSession,
  type IdSource,
  type RecallCandidate,
  explainCandidate,
} from '@elma/domain';
import type { ProjectionRunner } from '../views/runner';
import type { WriteTracker } from '../views/write-tracker';
import type { AuditLog } from '../audit/audit-log';
import type { LegalHolds } from '../governance/legal-holds';
import type { PolicyStore } from '../governance/policy-store';
import { countTokens } from '@elma/shared';
import { contextTokens } from './context-tokens';
import { Retrieval } from './retrieval';

export class PurposeNotPermitted extends DomainError {
  constructor(purpose: string) {
    super('RECALL.PURPOSE_NOT_PERMITTED', `the token does not permit the purpose ${purpose}`, { purpose });
  }
}

/** How many fused candidates recall considers before packing. */
const CANDIDATES = 30;
/** How many edges of one entity a hop looks at. */
const EDGES_PER_ENTITY = 20;

/** Longest wait for the query's vector before recall answers by BM25 alone (one query takes ~50-100 ms). */
const QUERY_EMBEDDING_DEADLINE_MS = 2_000;
/** How recall ranks: the routes' fusion, the neighbour smoothing factor and the evidence steps. */
export interface RecallRanking {
  fusion: Fusion;
  smoothing: number;
  steps?: EvidenceSteps;
}
/**
 * Ranking when the service is given none: normalised-score fusion, equal
 * weights, and a dense floor of 0.2 cosine (a hit of the dense route less
 * similar adds nothing: the nearest neighbours of a query always exist,
 * related or not, and an unrelated memory in a context pack costs budget and
 * misleads). Deployments set it per embedder (infra config `recall`).
 */
export const DEFAULT_RECALL_FUSION: Fusion = { method: 'normalised', weights: { bm25: 0.5, dense: 0.5 }, denseFloor: 0.2 };

/**
 * Parts of recall replaced for the evaluation's ablations (docs/evaluation-method.md), never by an operator:
 * `openElma` takes them as an evaluation option only. Each absent field is the complete system.
 */
export interface RecallAblations {
  /**
   * `pushdown` (default): the caller's compiled read policy, clearance and legal holds are part of the index
   * query. `post-filter`: the index is searched without them (lifecycle, validity and kinds still pushed down),
   * for the same number of candidates, and the policy drops what the caller may not see afterwards.
   */
  policy?: 'pushdown' | 'post-filter';
  /**
   * `hybrid` (default): BM25 and dense routes fused. `dense`: the dense route alone (nothing without a semantic embedder).
   * `bm25`: the BM25 route alone (the query is not embedded).
   */
  routes?: 'hybrid' | 'dense' | 'bm25';
  /**
   * `utility` (default): budgeted packing by marginal utility, prompt groups, citation lines and disagreement
   * notes. `concatenate`: the best-scored hits joined one per line until the budget, nothing else.
   */
  packing?: 'utility' | 'concatenate';
}

/** The filter without the caller's policy (clauses, clearance, legal holds): what post-filtering searches with. */
function withoutPolicy({ clauses: _clauses, exclude: _exclude, ...filter }: IndexFilter): IndexFilter {
  return { ...filter, maxSensitivity: 'restricted' };
}

export class RecallNotFound extends DomainError {
  constructor(id: string) {
    super('RECALL.NOT_FOUND', `recall ${id} is unknown or no longer remembered`, { recallId: id });
  }
}

/**
 * Recall (paper, section 5.3 'Retrieval and context packing'): policy compiled into the index filter (pushdown), hybrid
 * retrieval, a re-check of every hit (defence in depth), optionally the
 * relations one or two edges out from what was found, then budgeted packing
 * with citations. Working memories are recalled only within their session.
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
      ids: IdSource;
      /**
       * How the routes are fused, how much a memory gains from its neighbouring turns (0: no smoothing) and
       * the evidence steps (absent: DEFAULT_EVIDENCE_STEPS; `{}`: none).
       */
      ranking?: RecallRanking;
      /** Evaluation only: the ablations of recall (absent: the complete system). */
      ablations?: RecallAblations;
    },
  ) {
    this.retrieval = new Retrieval(deps.index, {
      fusion: deps.ranking?.fusion ?? DEFAULT_RECALL_FUSION,
      smoothing: deps.ranking?.smoothing ?? DEFAULT_SMOOTHING_FACTOR,
      ...(deps.ranking?.steps ? { steps: deps.ranking.steps } : {}),
    });
  }

  /**
   * The same recall over the same stores, ranked otherwise (the fields given replace this one's): what a
   * benchmark times side by side with the configured ranking.
   */
  withRanking(ranking: Partial<RecallRanking>): RecallService {
    const current: RecallRanking = {
      fusion: this.deps.ranking?.fusion ?? DEFAULT_RECALL_FUSION,
      smoothing: this.deps.ranking?.smoothing ?? DEFAULT_SMOOTHING_FACTOR,
      ...(this.deps.ranking?.steps ? { steps: this.deps.ranking.steps } : {}),
    };
    return new RecallService({ ...this.deps, ranking: { ...current, ...ranking } });
  }

  private readonly retrieval: Retrieval;

  /**
   * What each recent recall packed, for its caller's feedback (bounded: feedback comes soon or not at all), and
   * its usage count still being written: feedback waits for it, so that a read after the feedback sees both.
   */
  private readonly recent = new Map<string, { tenant: string; sub: string; ids: Set<string>; counted: Promise<void> }>();
  private static readonly RECENT_MAX = 10_000;
  /** Usage counts written after their recall answered, until they are written (see `settled`). */
  private readonly deferred = new Set<Promise<void>>();

  /**
   * Records that the caller used these memories of one of their recent
   * recalls (`usage.adopted`, which packing weighs). Only memories that recall
   * returned to this caller count; anything else is refused, not ignored.
   */
  async feedback(principal: Principal, recallId: string, body: unknown, requestId = 'internal'): Promise<{ adopted: number }> {
    const { adopted } = parseOrThrow(RecallFeedback, body);
    const recall = this.recent.get(recallId);
    if (!recall || recall.tenant !== principal.tenant || recall.sub !== principal.sub) throw new RecallNotFound(recallId);
    const unknown = adopted.filter((id) => !recall.ids.has(id));
    if (unknown.length > 0) throw new ValidationFailed(unknown.map((id) => ({ path: 'adopted', message: `${id} was not in this recall` })));
    await recall.counted;
    await this.deps.index.recordUsage(principal.tenant, adopted, 'adopted', this.deps.clock.now().toISOString());
    await this.deps.audit.record({
      tenant: principal.tenant,
      actor: principal,
      subject: null,
      operation: 'write',
      resourceIds: [`recall/${recallId}`, ...adopted],
      decision: { effect: 'allow', rule: 'recall-feedback' },
      requestId,
    });
    return { adopted: new Set(adopted).size };
  }

  async recall(principal: Principal, body: unknown, requestId = 'internal'): Promise<RecallResult> {
    const request = parseOrThrow(RecallRequest, body);
    const audit = (resourceIds: string[], decision: { effect: 'allow' | 'deny'; rule: string }) =>
      this.deps.audit.record({
        tenant: principal.tenant,
        actor: principal,
        subject: null,
        operation: 'read',
        resourceIds,
        decision,
        requestId,
      });
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
    const kinds = request.filter?.kinds ?? request.kinds ?? MemoryKind.options;
    const scope = scopeOf(request.filter);
    const base: IndexFilter = {
      statuses: RECALLABLE_STATUSES,
      maxSensitivity: principal.clearance,
      // Purpose limitation lives in the clauses: a rule may allow cross-purpose use.
      asOf: request.asOf ?? now.toISOString(),
      knownAsOf: request.knownAsOf,
      now: now.toISOString(),
      clauses,
      // Held records are withheld from everyone but the legal role.
      ...(principal.roles.includes(ROLES.legal) ? {} : { exclude: await this.deps.holds.exclusions(principal.tenant) }),
      // The caller's scope narrows every query below (routes, neighbours, the session's, edges): ANDed with the policy.
      ...(scope ? { scope } : {}),
    };
    const candidates = await this.candidates(principal, request, kinds, base);
    const result = this.pack(candidates, request, base.asOf!);
    const packedIds = result.items.map((item) => item.id);
    const counted = this.countRetrieved(principal.tenant, packedIds, now);
    if (this.recent.size >= RecallService.RECENT_MAX) this.recent.delete(this.recent.keys().next().value as string);
    this.recent.set(result.recallId, { tenant: principal.tenant, sub: principal.sub, ids: new Set(packedIds), counted });
    const recordOf = new Map(candidates.map((hit) => [hit.record.id, hit.record]));
    const rules = new Set(result.items.map((item) => clauses.find((c) => matchesClauses(recordOf.get(item.id)!, [c]))!.ruleId));
    await audit(
      result.items.map((item) => item.id),
      { effect: 'allow', rule: [...rules].join(',') || clauses.map((c) => c.ruleId).join(',') },
    );
    return result;
  }

  /**
   * The hits of the query under the filter, and the edges reached from them, each procedure at its latest version.
   * Working memories never come out of the shared query: the caller's own session gets a query of its own,
   * narrowed to that session inside the index (so another session's working memories take no candidate's
   * place), whose hits are checked again here.
   */
  private async candidates(
    principal: Principal,
    request: RecallRequest,
    kinds: MemoryKind[],
    base: IndexFilter,
  ): Promise<RecallCandidate[]> {
    const filter: IndexFilter = { ...base, kinds: kinds.filter((k) => k !== 'working') };
    const sessionFilter: IndexFilter | undefined =
      request.session !== undefined && kinds.includes('working')
        ? { ...base, kinds: ['working'], workingSession: request.session }
        : undefined;
    const { policy, routes } = this.deps.ablations ?? {};
    const vector = routes === 'bm25' ? undefined : await this.queryVector(request.query);
    // The fusion's dense floor keeps unrelated nearest neighbours out; smoothing adds the turns around the hits.
    const admitted = (hit: SearchHit, by: IndexFilter) =>
      hit.record.tenant === principal.tenant && matchesFilter(hit.record, by) && visibleInSession(hit.record, request.session);
    const search = async (by: IndexFilter) =>
      (
        await this.retrieval.search({
          tenant: principal.tenant,
          text: routes === 'dense' ? '' : request.query,
          ...(vector ? { vector } : {}),
          limit: CANDIDATES,
          filter: policy === 'post-filter' ? withoutPolicy(by) : by,
        })
      ).filter((hit) => admitted(hit, by));
    const [shared, ofSession] = await Promise.all([search(filter), sessionFilter ? search(sessionFilter) : []]);
    const hits = [...shared, ...ofSession].sort((a, b) => b.score - a.score);
    const reached =
      request.hops > 0 && kinds.includes('relational') ? await this.reachEdges(principal.tenant, hits, request.hops, base) : [];
    const top = Math.max(0, ...hits.map((hit) => hit.score));
    return latestProcedureVersions([
      ...hits,
      // An edge reached by following relations is as relevant as the best hit, halved at every hop.
      ...reached.map(({ item, hop, entity }) => ({ ...item, score: top * HOP_DECAY ** hop, hop, entity })),
    ]);
  }

  /**
   * The query's vector for the dense route, or none: a lexical embedder's dense route only repeats BM25
   * with noise, so it is not asked; a model that fails or does not answer within
   * QUERY_EMBEDDING_DEADLINE_MS leaves recall to BM25 rather than failing it (`/health` shows the model's state).
   */
  private async queryVector(query: string): Promise<Float32Array | undefined> {
    if (!this.deps.embedder.semantic) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), QUERY_EMBEDDING_DEADLINE_MS)));
    try {
      const embedded = this.deps.embedder.embed([query], 'query').then(
        ([vector]) => vector,
        () => undefined,
      );
      return await Promise.race([embedded, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Usage is a statistic, not part of the answer: counted right after the response, on the next turn. */
  private countRetrieved(tenant: string, ids: string[], now: Date): Promise<void> {
    if (ids.length === 0) return Promise.resolve();
    const counted = new Promise<void>((resolve) =>
      setImmediate(() => void this.deps.index.recordUsage(tenant, ids, 'retrieved', now.toISOString()).then(resolve, () => resolve())),
    );
    this.deferred.add(counted);
    void counted.then(() => this.deferred.delete(counted));
    return counted;
  }

  /**
   * Work of this process's recalls still running after their answer (usage counts): what a benchmark counts
   * in its measured window, so that deferring work never passes for making it cheaper.
   */
  get deferredPending(): number {
    return this.deferred.size;
  }

  /** Waits for the work deferred by the recalls answered so far (`deferredPending` is 0 afterwards). */
  async settled(): Promise<void> {
    await Promise.all(this.deferred);
  }

  /**
   * The edges up to `hops` away from the entities the hits name. Each
   * entity's edges are looked up by its `entityToken` through the index,
   * under the same pushed-down policy as the query, and checked again here.
   */
  private async reachEdges(tenant: string, hits: SearchHit[], hops: number, base: IndexFilter) {
    const edges: IndexFilter = { ...base, kinds: ['relational'] };
    return followEdges(
      hits.map((hit) => hit.record),
      hops,
      async (entities) =>
        (
          await Promise.all(
            entities.map((entity) => this.deps.index.search({ tenant, text: entityToken(entity), limit: EDGES_PER_ENTITY, filter: edges })),
          )
        )
          .flat()
          .filter((hit) => hit.record.tenant === tenant && matchesFilter(hit.record, edges)),
    );
  }

  /**
   * Packs within the budget with the purpose's weights and renders the context in prompt order; the items
   * come best first (`rankByMarginalUtility`; by score when concatenating), each with what made its score
   * and why it was a candidate. `at` is the query's point in business time.
   */
  private pack(hits: RecallCandidate[], request: RecallRequest, at: string): RecallResult {
    const top = Math.max(0, ...hits.map((hit) => hit.score));
    const byId = new Map(hits.map((hit) => [hit.record.id, hit]));
    // Counted when indexed: tokenising 30 candidates per recall cost more than the search.
    const known = new Map(hits.flatMap((hit) => (hit.tokens !== undefined ? [[hit.record.content.text, hit.tokens] as const] : [])));
    const tokensOf = (text: string) => known.get(text) ?? countTokens(text);
    const concatenate = this.deps.ablations?.packing === 'concatenate';
    const weights = packProfile(request.purpose);
    // Concatenation packs by score, best first, and puts them in the prompt in that order.
    const packed = concatenate
      ? packByScore(hits, { budgetTokens: request.budgetTokens, countTokens: tokensOf })
      : packByMarginalUtility(
          hits.map((hit) => ({ record: hit.record, vector: hit.vector, relevance: top > 0 ? hit.score / top : 0 })),
          { budgetTokens: request.budgetTokens, at, countTokens: tokensOf, weights },
        );
    const inPrompt = concatenate ? packed : orderForPrompt(packed, at);
    const ranked = concatenate ? packed : rankByMarginalUtility(packed, weights);
    // A reason names another memory (the hit a neighbour or an expansion came with) only when it is in the answer too.
    const answered = new Set(packed.map((p) => p.record.id));
    const items = ranked.map(({ record: r, tokens, gain }, index) => {
      const hit = byId.get(r.id)!;
      return {
        id: r.id,
        rank: index + 1,
        kind: r.kind,
        text: r.content.text,
        score: hit.score,
        utility: gain,
        ...explainCandidate(hit, (id) => answered.has(id)),
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
          instructionLike: r.instructionLike === true,
        },
        ...(hit.hop !== undefined ? { hop: hit.hop } : {}),
      };
    });
    const promptOrder = inPrompt.map((p) => p.record.id);
    const records = inPrompt.map((p) => p.record);
    const context = concatenate ? renderPlain(records) : renderContext(records);
    const itemOf = new Map(items.map((item) => [item.id, item]));
    return {
      recallId: `rcl_${this.deps.ids.next()}`,
      items,
      promptOrder,
      context,
      usedTokens: items.reduce((sum, item) => sum + item.tokens, 0),
      contextTokens: concatenate
        ? countTokens(context)
        : contextTokens(
            context,
            promptOrder.map((id) => itemOf.get(id)!),
          ),
      budgetTokens: request.budgetTokens,
      candidates: hits.length,
    };
  }
}
