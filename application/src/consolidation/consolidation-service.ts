import {
  KeyShredded,
  extractFacts,
  extractiveSummary,
  factKey,
  groupBy,
  inheritedInstructionFlag,
  inheritedSources,
  inheritedRestrictions,
  nearDuplicateGroups,
  normalizeForFingerprint,
  type EventLog,
  type MemoryIndex,
  type MemoryRecord,
  type ReviewFlagDraft,
} from '@elma/domain';
import type { ErasureGuard } from '../erasure/guard';
import { summaryDivergence } from '../review/review-detector';
import type { ReviewFlags } from '../review/review-flags';
import { deterministicUuid } from '@elma/shared';
import { memoryVersionAppends } from '../memory/memory-events';
import type { EventSealer } from '../sealing/sealed-events';

/** A fact's identity including its value: two records with the same key say the same thing. */
const sameFactKey = (record: MemoryRecord) =>
  `${factKey(record.content.fact!)}\u001f${normalizeForFingerprint(record.content.fact!.value)}`;

/** Lineage entries (cheap, no content) and records (parsed, with vectors) handled between two event-loop yields. */
const YIELD_EVERY_ENTRIES = 2_000;
const YIELD_EVERY_RECORDS = 100;

/** Lets timers and I/O run (HTTP requests, heartbeats, workflow activations) before the work goes on. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Rule versions: part of every output's fingerprint, so a new version re-derives instead of colliding. */
export const CONSOLIDATION_RULES = {
  merge: { rule: 'consolidate.merge', version: '1' },
  summary: { rule: 'consolidate.summary', version: '1' },
  extract: { rule: 'consolidate.extract', version: '1' },
} as const;

export interface ConsolidationParams {
  /** Cosine at or above which two memories are near-duplicates. */
  duplicateCosine: number;
  /** Sentences per session summary. */
  summarySentences: number;
  /** A day with fewer episodic memories than this is not summarised. */
  minSessionMemories: number;
  /** Confidence given to a pattern-extracted fact (never above its source's). */
  extractedConfidence: number;
}

export const DEFAULT_CONSOLIDATION_PARAMS: ConsolidationParams = {
  duplicateCosine: 0.95,
  summarySentences: 5,
  minSessionMemories: 3,
  extractedConfidence: 0.6,
};

export interface ConsolidationResult {
  /** Views written for the first time. */
  created: number;
  /** Views this run would write that already existed (same inputs, rules and parameters). */
  unchanged: number;
  /** Views not written because their content was erased for the subject (tombstones) or their id was erased. */
  skippedErased: number;
  merges: number;
  summaries: number;
  facts: number;
}

/**
 * Consolidation (paper, section 5.2 'Consolidation'): near-duplicate merges, extractive
 * session summaries and pattern-extracted facts for one subject. Every
 * output is a view that registers its whole input set (lineage), its rule
 * and version; its id is the fingerprint of (inputs, rule version, model
 * version, parameters), so running twice creates nothing new. Confidence is
 * the minimum of the inputs (never amplified), taint and sensitivity are the
 * worst of them, purposes the ones every input allows, expiry the earliest of
 * them and their ancestors, and the view keeps its ancestry, so a legal hold
 * on any input (placed before or after) withholds it too. A view never mixes
 * owners, projects or retention classes. Erased content is never re-derived.
 */
/** How long a consolidation pass waits for the tenant's pending vectors (an embedder that is down must not stall it). */
const EMBEDDING_WAIT_MS = 30_000;

export class ConsolidationService {
  constructor(
    private readonly deps: {
      log: EventLog;
      index: MemoryIndex;
      sealer: EventSealer;
      erased: ErasureGuard;
      /**
       * The embedding stage: near-duplicates are found by vector, so a pass
       * first waits (bounded) for the tenant's pending vectors. Past the wait,
       * records still without one are compared by fact only, and a later pass
       * merges them.
       */
      embeddings?: { waitForEmbedded(tenant: string, timeoutMs: number): Promise<void> };
      /** Where a summary its sources do not support is flagged for review (it is still written: flags are advisory). */
      reviews?: Pick<ReviewFlags, 'raise'>;
    },
    private readonly params: ConsolidationParams = DEFAULT_CONSOLIDATION_PARAMS,
  ) {}

  /** The subject of a record, given by its id: workflows carry record ids, never a person's id. */
  async subjectOf(tenant: string, recordId: string): Promise<string | undefined> {
    return (await this.deps.index.get(tenant, recordId))?.record.subject;
  }

  /** One record id per subject with current episodic memories: the handles the sweep passes around. */
  async subjectRefs(tenant: string): Promise<string[]> {
    const refs = new Map<string, string>();
    let seen = 0;
    for await (const entry of this.deps.index.lineage(tenant)) {
      if (entry.kind === 'episodic' && !refs.has(entry.subject)) refs.set(entry.subject, entry.id);
      if (++seen % YIELD_EVERY_ENTRIES === 0) await yieldToEventLoop();
    }
    return [...refs.values()];
  }

  async consolidate(tenant: string, subjectRef: string): Promise<ConsolidationResult> {
    return this.consolidateMany(tenant, [subjectRef]);
  }

  /**
   * Consolidates several subjects (each named by one of its records) with a
   * single pass over the tenant's lineage, one subject after another. The
   * index has no lookup by subject, so a pass per subject would make a sweep
   * quadratic in the tenant's size; and the pass is split by event-loop
   * yields, so the API and the workflow tasks of the same process keep being
   * served while it runs (the index pages arrive as microtasks, which alone
   * never let I/O in).
   */
  async consolidateMany(tenant: string, subjectRefs: string[]): Promise<ConsolidationResult> {
    const total: ConsolidationResult = { created: 0, unchanged: 0, skippedErased: 0, merges: 0, summaries: 0, facts: 0 };
    const subjects = new Set<string>();
    for (const ref of subjectRefs) {
      const subject = await this.subjectOf(tenant, ref);
      if (subject !== undefined) subjects.add(subject);
    }
    if (subjects.size === 0) return total;
    await this.deps.embeddings?.waitForEmbedded(tenant, EMBEDDING_WAIT_MS).catch(() => undefined);
    const ids = new Map<string, string[]>();
    let seen = 0;
    for await (const entry of this.deps.index.lineage(tenant)) {
      if (subjects.has(entry.subject)) {
        const list = ids.get(entry.subject);
        if (list) list.push(entry.id);
        else ids.set(entry.subject, [entry.id]);
      }
      if (++seen % YIELD_EVERY_ENTRIES === 0) await yieldToEventLoop();
    }
    for (const subject of subjects) {
      const result = await this.consolidateSubject(tenant, subject, ids.get(subject) ?? []);
      for (const key of Object.keys(total) as (keyof ConsolidationResult)[]) total[key] += result[key];
      await yieldToEventLoop();
    }
    return total;
  }

  private async consolidateSubject(tenant: string, subject: string, recordIds: string[]): Promise<ConsolidationResult> {
    const result: ConsolidationResult = { created: 0, unchanged: 0, skippedErased: 0, merges: 0, summaries: 0, facts: 0 };
    const mine: { record: MemoryRecord; vector?: Float32Array }[] = [];
    for (const [i, id] of recordIds.entries()) {
      const stored = await this.deps.index.get(tenant, id);
      if (stored && (stored.record.status === 'active' || stored.record.status === 'disputed')) mine.push(stored);
      if ((i + 1) % YIELD_EVERY_RECORDS === 0) await yieldToEventLoop();
    }
    const views: MemoryRecord[] = [];
    const divergent: ReviewFlagDraft[] = [];
    // A view never mixes owners, projects or retention classes: these it inherits as they are, not combined.
    for (const part of groupBy(mine, (m) =>
      [m.record.policy.owner, m.record.policy.project ?? '', m.record.retention.class].join('\u001f'),
    ).values()) {
      views.push(...this.views(tenant, subject, part, result, divergent));
    }

    const kept: MemoryRecord[] = [];
    for (const view of views) {
      if (await this.deps.erased.isErased(tenant, subject, view.content)) result.skippedErased++;
      else kept.push(view);
    }
    await this.write(tenant, kept, result);
    const keptIds = new Set(kept.map((v) => v.id));
    await this.deps.reviews?.raise(
      tenant,
      divergent.filter((flag) => keptIds.has(flag.recordIds[0])),
    );
    return result;
  }

  /** The merges, summaries and facts over one subject's records of one owner, project and retention class. */
  private views(
    tenant: string,
    subject: string,
    mine: { record: MemoryRecord; vector?: Float32Array }[],
    result: ConsolidationResult,
    divergent: ReviewFlagDraft[],
  ): MemoryRecord[] {
    const episodic = mine.filter((m) => m.record.kind === 'episodic' && !m.record.provenance.rule.startsWith('consolidate.'));
    const views: MemoryRecord[] = [];

    // Near-duplicates: episodic memories by vector, and facts stating the same value about the same entity
    // and attribute (different values are conflicts, which the projection settles).
    const facts = mine.filter(
      (m) => m.record.kind === 'semantic' && m.record.content.fact && !m.record.provenance.rule.startsWith('consolidate.'),
    );
    const candidates = [...episodic, ...facts];
    const groups = [
      ...nearDuplicateGroups(
        // A record still waiting for its vector is not compared by vector this time; a later pass will.
        episodic.map((m) => ({ id: m.record.id, ...(m.vector ? { vector: m.vector } : {}) })),
        this.params.duplicateCosine,
      ),
      ...nearDuplicateGroups(
        facts.map((m) => ({ id: m.record.id, factKey: sameFactKey(m.record) })),
        Number.POSITIVE_INFINITY,
      ),
    ];
    for (const group of groups) {
      const inputs = group.map((id) => candidates.find((m) => m.record.id === id)!.record);
      const newest = [...inputs].sort((a, b) => Date.parse(b.validFrom) - Date.parse(a.validFrom))[0];
      const view = this.view(tenant, subject, CONSOLIDATION_RULES.merge, inputs, newest.content, newest.kind, newest.validFrom);
      if (view) {
        views.push(view);
        result.merges++;
      }
    }

    const byDay = new Map<string, MemoryRecord[]>();
    for (const { record } of episodic) {
      const day = record.validFrom.slice(0, 10);
      byDay.set(day, [...(byDay.get(day) ?? []), record]);
    }
    for (const [day, inputs] of byDay) {
      if (inputs.length < this.params.minSessionMemories) continue;
      const ordered = [...inputs].sort((a, b) => Date.parse(a.validFrom) - Date.parse(b.validFrom));
      const summary = extractiveSummary(
        ordered.map((r) => ({ id: r.id, text: r.content.text })),
        this.params.summarySentences,
      );
      if (summary.sentences.length === 0) continue;
      const used = ordered.filter((r) => summary.sourceIds.includes(r.id));
      const said = summary.sentences.map((s) => s.text).join(' ');
      const text = `Session summary (${day}): ${said}`;
      const view = this.view(tenant, subject, CONSOLIDATION_RULES.summary, used, { text }, 'episodic', ordered[0].validFrom);
      if (view) {
        views.push(view);
        result.summaries++;
        // What the summary says against what its sources said (the heading's day is the summariser's, not a claim).
        const divergence = summaryDivergence(view, said, used);
        if (divergence) divergent.push(divergence);
      }
    }

    for (const { record } of episodic) {
      for (const fact of extractFacts(record.content.text, record.validFrom)) {
        const value = fact.due ? `${fact.value} (due ${fact.due})` : fact.value;
        const structured = { entity: subject, attribute: fact.attribute, value, validFrom: record.validFrom };
        const view = this.view(
          tenant,
          subject,
          { rule: `${CONSOLIDATION_RULES.extract.rule}.${fact.pattern}`, version: CONSOLIDATION_RULES.extract.version },
          [record],
          { text: `${subject} ${fact.attribute}: ${value}`, fact: structured },
          'semantic',
          record.validFrom,
          Math.min(record.confidence, this.params.extractedConfidence),
        );
        if (view) {
          views.push(view);
          result.facts++;
        }
      }
    }

    return views;
  }

  /** A view over `inputs`, or undefined when they share no purpose (a view must not widen who may read them). */
  private view(
    tenant: string,
    subject: string,
    rule: { rule: string; version: string },
    inputs: MemoryRecord[],
    content: MemoryRecord['content'],
    kind: MemoryRecord['kind'],
    validFrom: string,
    confidence = Math.min(...inputs.map((r) => r.confidence)),
  ): MemoryRecord | undefined {
    const { sensitivity, purposes, project, ancestry } = inheritedRestrictions(inputs);
    if (purposes.length === 0) return undefined;
    const inputIds = inputs.map((r) => r.id).sort();
    const fingerprint = deterministicUuid(
      tenant,
      rule.rule,
      rule.version,
      'model:none',
      JSON.stringify(this.params),
      ...inputIds,
      content.fact ? factKey(content.fact) : '',
    );
    const recordedAt = inputs
      .map((r) => r.recordedAt)
      .sort()
      .at(-1)!;
    return {
      id: `mem_cs_${fingerprint}`,
      tenant,
      subject,
      kind,
      content,
      validFrom,
      validTo: null,
      recordedAt,
      policy: { owner: subject, roles: [], purposes, sensitivity, ...(project !== undefined ? { project } : {}) },
      provenance: {
        sourceEventIds: [...new Set(inputs.flatMap((r) => r.provenance.sourceEventIds))],
        parentIds: inputIds,
        ancestry,
        rule: rule.rule,
        ruleVersion: rule.version,
      },
      confidence: Math.min(confidence, ...inputs.map((r) => r.confidence)),
      sourceTrust: inputs.map((r) => r.sourceTrust).includes('model') ? 'model' : inputs[0].sourceTrust,
      tainted: inputs.some((r) => r.tainted),
      ...inheritedInstructionFlag(inputs),
      ...inheritedSources(inputs),
      usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
      version: 1,
      status: 'active',
      retention: {
        class: inputs[0].retention.class,
        // A view expires with its first-expiring input or ancestor.
        expiresAt: ancestry.expiresAt,
      },
    };
  }

  /**
   * Appends each view's `MemoryRecorded` with a deterministic event id; an existing one is a duplicate, an erased
   * id is skipped, and so is a view of an input erased since it was read (an erasure ran meanwhile).
   */
  private async write(tenant: string, views: MemoryRecord[], result: ConsolidationResult): Promise<void> {
    const erased = await this.deps.sealer.erasedAmong(tenant, [...new Set(views.flatMap((v) => [v.id, ...v.provenance.parentIds]))]);
    const live = views.filter((v) => !erased.has(v.id) && !v.provenance.parentIds.some((id) => erased.has(id)));
    result.skippedErased += views.length - live.length;
    if (live.length === 0) return;
    let requests;
    try {
      requests = await memoryVersionAppends(this.deps.sealer, tenant, live);
    } catch (error) {
      // An id erased between the check and the seal: the next run skips it.
      if (error instanceof KeyShredded) return;
      throw error;
    }
    const results = await this.deps.log.appendMany(requests);
    for (const r of results) {
      if (r.duplicate) result.unchanged++;
      else result.created++;
    }
  }
}
