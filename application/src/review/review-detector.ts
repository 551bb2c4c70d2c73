import {
  WriteRateWindows,
  sourceTierShifts,
  trustForChannel,
  trustFlags,
  unsupportedClaims,
  type EventIngested,
  type MemoryRecord,
  type ReviewFlagDraft,
} from '@elma/domain';
import type { PolicyStore } from '../governance/policy-store';
import type { ReviewFlags } from './review-flags';

/** What one pass of the projection saw for a tenant. */
export interface ProjectedWrites {
  /** The ingested events it decided on, in log order. */
  ingested: readonly EventIngested[];
  /** The records it derived or indexed (new versions 1 among them). */
  records: readonly MemoryRecord[];
  /** The revisions settling conflicts recorded. */
  revisions: readonly MemoryRecord[];
}

/**
 * Runs the review detectors over what the projection decided, after it is
 * recorded, and raises their flags. It only reads the records and appends to
 * `reviews-{tenant}`: a flag never changes a memory. Replays raise nothing
 * new (flag ids are keyed by what was found).
 */
export class ReviewDetector {
  private readonly windows = new Map<string, WriteRateWindows>();

  constructor(private readonly deps: { flags: ReviewFlags; policies: Pick<PolicyStore, 'get'> }) {}

  async inspect(tenant: string, writes: ProjectedWrites): Promise<void> {
    const ingested = writes.ingested.map((event) => ({
      eventId: event.eventId,
      sourceSystem: event.source.system,
      // Events ingested before trust was resolved at ingest carry none: the channel's tier, as their memories got.
      sourceTrust: event.sourceTrust ?? trustForChannel(event.source.channel),
      recordedAt: event.recordedAt,
    }));
    // Facts written by a source or a caller; consolidation's views restate what was written, they are no new writes.
    const facts = writes.records
      .filter((r) => r.kind === 'semantic' && r.content.fact && r.version === 1 && !r.provenance.rule.startsWith('consolidate.'))
      .sort((a, b) => Date.parse(a.recordedAt) - Date.parse(b.recordedAt));
    const thresholds = (await this.deps.policies.get(tenant)).reviews;
    let windows = this.windows.get(tenant);
    if (!windows) this.windows.set(tenant, (windows = new WriteRateWindows()));
    const shifts = ingested.length > 0 ? sourceTierShifts((await this.deps.flags.state(tenant)).sourceTiers, ingested) : undefined;
    const drafts: ReviewFlagDraft[] = [
      ...trustFlags(writes.records, writes.revisions),
      ...windows.observe(thresholds, { ingested, facts }),
      ...(shifts?.flags ?? []),
    ];
    await this.deps.flags.raise(tenant, drafts);
    // After the flags: should this fail, the pass is retried and compares with the tiers as they were.
    await this.deps.flags.observeSourceTrust(tenant, shifts?.observed ?? []);
  }
}

/**
 * A `summary_divergence` flag for a summary whose numbers, dates or named
 * values none of its sources states (undefined when every claim is
 * supported). `text` is the summary's own words, without any heading the
 * summariser added.
 */
export function summaryDivergence(summary: MemoryRecord, text: string, sources: readonly MemoryRecord[]): ReviewFlagDraft | undefined {
  const claims = unsupportedClaims(
    text,
    sources.map((s) => s.content.text),
  );
  if (claims.length === 0) return undefined;
  return {
    key: `summary_divergence\u001f${summary.id}`,
    kind: 'summary_divergence',
    rule: 'unsupported_claims',
    eventIds: summary.provenance.sourceEventIds.slice(0, 1000),
    recordIds: [summary.id, ...sources.map((s) => s.id)].slice(0, 1000),
    count: claims.length,
    raisedAt: summary.recordedAt,
  };
}
