import { factKey } from '../memory/conflicts';
import { episodicIdFor } from '../memory/derive';
import { SOURCE_TRUST_RANK, type MemoryRecord, type SourceTrust } from '../memory/record';
import type { ReviewThresholds } from '../policy/policy';
import type { ReviewFlagDraft } from './flag';

/**
 * The detectors behind review flags (paper, section 5.6 'Security and
 * poisoning defence': a new memory that contradicts established facts, a
 * sudden change of source trust, an unusual write rate about one subject,
 * a summary that its sources do not entail). Pure: time is the transaction
 * time of the writes they look at, never a clock.
 */

/** One ingested event, as the source detectors see it: ids, the source system and its resolved tier, transaction time. */
export interface IngestedWrite {
  eventId: string;
  sourceSystem: string;
  sourceTrust: SourceTrust;
  recordedAt: string;
}

const MAX_IDS = 1000;
const rank = (record: MemoryRecord) => SOURCE_TRUST_RANK[record.sourceTrust];

/**
 * Flags for what settling conflicts decided by trust. A fact that arrived
 * now and was superseded by `source_authority` contradicted an established
 * fact of a higher tier: `trust_conflict` (the rule already kept it out of
 * the current answer; the flag asks a person whether it was an attack or
 * news the trusted source has not caught up with). A fact that arrived now
 * and superseded established facts of a lower tier took the value over for
 * another tier: `trust_shift` (`fact_tier_flip`), unless it comes from a
 * source the tenant registered as authoritative, whose word is the point.
 * `incoming` are the records that arrived (version 1), `revisions` what
 * settling them recorded.
 */
export function trustFlags(incoming: readonly MemoryRecord[], revisions: readonly MemoryRecord[]): ReviewFlagDraft[] {
  const arrived = new Map(incoming.filter((r) => r.version === 1).map((r) => [r.id, r]));
  // Facts only: the episode a fact came from is revised with it (episodeFollowingFact) and adds no flag of its own.
  const byAuthority = revisions.filter(
    (r) => r.kind === 'semantic' && r.resolution?.rule === 'source_authority' && r.status === 'superseded',
  );
  const flags: ReviewFlagDraft[] = [];
  const takenOver = new Map<string, MemoryRecord[]>();
  for (const revision of byAuthority) {
    const against = revision.resolution!.against;
    if (arrived.has(revision.id)) {
      flags.push({
        key: `trust_conflict\u001f${revision.id}`,
        kind: 'trust_conflict',
        rule: 'lower_trust_contradiction',
        eventIds: revision.provenance.sourceEventIds.slice(0, MAX_IDS),
        recordIds: [revision.id, ...against].slice(0, MAX_IDS),
        count: against.length,
        raisedAt: revision.revisedAt ?? revision.recordedAt,
      });
      continue;
    }
    for (const id of against) {
      const winner = arrived.get(id);
      if (!winner || rank(winner) <= rank(revision) || winner.sourceTrust === 'authoritative') continue;
      takenOver.set(winner.id, [...(takenOver.get(winner.id) ?? []), revision]);
    }
  }
  for (const [id, losers] of takenOver) {
    const winner = arrived.get(id)!;
    flags.push({
      key: `fact_tier_flip\u001f${id}`,
      kind: 'trust_shift',
      rule: 'fact_tier_flip',
      eventIds: winner.provenance.sourceEventIds.slice(0, MAX_IDS),
      recordIds: [id, ...losers.map((r) => r.id)].slice(0, MAX_IDS),
      count: losers.length,
      raisedAt: winner.recordedAt,
    });
  }
  return flags;
}

/**
 * Source systems seen with another trust tier than the last time
 * (`known`): one `trust_shift` flag per event that changed it. A system seen
 * for the first time sets its tier and raises nothing. A write no later than
 * the one that set the known tier was seen before (a replayed batch, or
 * another process catching up) and is passed over, so a replay never
 * compares an old write with a newer tier. Returns the flags and the tier
 * each system was seen with (to be remembered).
 */
export function sourceTierShifts(
  known: ReadonlyMap<string, { tier: SourceTrust; at: string }>,
  writes: readonly IngestedWrite[],
): { flags: ReviewFlagDraft[]; observed: { system: string; tier: SourceTrust; at: string }[] } {
  const tiers = new Map(known);
  const flags: ReviewFlagDraft[] = [];
  const observed: { system: string; tier: SourceTrust; at: string }[] = [];
  for (const write of writes) {
    const seen = known.get(write.sourceSystem);
    if (seen && Date.parse(write.recordedAt) <= Date.parse(seen.at)) continue;
    const before = tiers.get(write.sourceSystem)?.tier;
    if (before === write.sourceTrust) continue;
    tiers.set(write.sourceSystem, { tier: write.sourceTrust, at: write.recordedAt });
    observed.push({ system: write.sourceSystem, tier: write.sourceTrust, at: write.recordedAt });
    if (before === undefined) continue;
    flags.push({
      key: `source_tier_changed\u001f${write.eventId}`,
      kind: 'trust_shift',
      rule: 'source_tier_changed',
      eventIds: [write.eventId],
      recordIds: [episodicIdFor(write.eventId)],
      sourceSystem: write.sourceSystem,
      count: 1,
      raisedAt: write.recordedAt,
    });
  }
  return { flags, observed };
}

/** A write counted by the rate detector: its id, the events it carries, when it was recorded. */
interface Counted {
  id: string;
  eventIds: string[];
  recordId?: string;
  at: number;
}

interface Window {
  entries: Counted[];
  /** Until when a burst already flagged in this scope raises nothing new (one flag per burst, not per write). */
  quietUntil: number;
}

/**
 * Write-rate anomalies per source system and per subject of facts (entity
 * and attribute), over a sliding window of the tenant's `windowMinutes`:
 * more than `maxEventsPerSource` events from one source system, or more than
 * `maxFactsPerKey` facts about one entity and attribute, raise one
 * `write_burst` flag per burst. Writes are counted once by id, so a replayed
 * batch counts nothing twice; the flag of a burst is keyed by its first
 * write, so a replay raises the same flag. Held in memory only: after a
 * restart the window starts empty (a burst straddling the restart may be
 * missed, never invented).
 */
export class WriteRateWindows {
  private readonly windows = new Map<string, Window>();

  /** Counts the writes (in transaction-time order) and returns the bursts they complete. */
  observe(thresholds: ReviewThresholds, writes: { ingested: readonly IngestedWrite[]; facts: readonly MemoryRecord[] }): ReviewFlagDraft[] {
    const span = thresholds.windowMinutes * 60_000;
    const flags: ReviewFlagDraft[] = [];
    const count = (
      scope: string,
      entry: Counted,
      limit: number,
      draft: Omit<ReviewFlagDraft, 'key' | 'eventIds' | 'recordIds' | 'count' | 'raisedAt'>,
    ) => {
      const window = this.windows.get(scope) ?? { entries: [], quietUntil: -Infinity };
      this.windows.set(scope, window);
      if (window.entries.some((e) => e.id === entry.id)) return;
      // Only whether the count passes the limit matters: the newest limit + 1 writes are enough to keep (a flood stays cheap).
      window.entries = [...window.entries.filter((e) => e.at > entry.at - span), entry].slice(-(limit + 1));
      if (window.entries.length <= limit || entry.at < window.quietUntil) return;
      window.quietUntil = entry.at + span;
      flags.push({
        ...draft,
        key: `${scope}\u001f${window.entries[0].id}`,
        eventIds: [...new Set(window.entries.flatMap((e) => e.eventIds))].slice(0, MAX_IDS),
        recordIds: window.entries.flatMap((e) => e.recordId ?? []).slice(0, MAX_IDS),
        count: window.entries.length,
        raisedAt: new Date(entry.at).toISOString(),
      });
    };
    for (const write of writes.ingested) {
      count(
        `source\u001f${write.sourceSystem}`,
        { id: write.eventId, eventIds: [write.eventId], at: Date.parse(write.recordedAt) },
        thresholds.maxEventsPerSource,
        { kind: 'write_burst', rule: 'source_burst', sourceSystem: write.sourceSystem },
      );
    }
    for (const fact of writes.facts) {
      if (fact.version !== 1 || !fact.content.fact) continue;
      count(
        `fact\u001f${fact.tenant}\u001f${factKey(fact.content.fact)}`,
        { id: fact.id, eventIds: fact.provenance.sourceEventIds, recordId: fact.id, at: Date.parse(fact.recordedAt) },
        thresholds.maxFactsPerKey,
        { kind: 'write_burst', rule: 'fact_burst' },
      );
    }
    this.forgetQuietScopes(span);
    return flags;
  }

  /** Scopes with nothing left in the window, and no burst to stay quiet about, are dropped (memory stays bounded). */
  private forgetQuietScopes(span: number): void {
    const newest = Math.max(...[...this.windows.values()].flatMap((w) => w.entries.map((e) => e.at)), -Infinity);
    for (const [scope, window] of this.windows) {
      const last = window.entries.at(-1)?.at ?? -Infinity;
      if (last <= newest - span && window.quietUntil <= newest) this.windows.delete(scope);
    }
  }
}

const NUMBER = /\d+(?:[.,:/-]\d+)*%?/gu;
/** Named values: quoted (English and Chinese quotes, book titles) or a capitalised word. */
const QUOTED = /[“"「『《]([^”"」』》]{1,80})[”"」』》]/gu;
const CAPITALISED = /\b\p{Lu}[\p{L}\p{N}]+(?:[ -]\p{Lu}[\p{L}\p{N}]+)*/gu;

const normalise = (text: string) => text.normalize('NFKC').toLowerCase();
/** A number as its digits: 1,000 and 1000 are the same claim. */
const digits = (number: string) => number.replace(/[,]/gu, '');

/**
 * The claims a summary makes that none of its sources states: numbers and
 * dates (as written, thousands separators aside), quoted names, titles and
 * capitalised names (a word that only starts a sentence is not a name).
 * Returns the claims themselves, for the caller to count; they are content
 * and never go into a flag.
 */
export function unsupportedClaims(summary: string, sources: readonly string[]): string[] {
  const said = normalise(sources.join('\n'));
  // Each number and its parts: an extractive summary may cut `3.5` at its point into `3.` and `5`.
  const saidNumbers = new Set([...said.matchAll(NUMBER)].flatMap((m) => [digits(m[0]), ...m[0].split(/[.,:/-]/u)]));
  const text = normalise(summary);
  const claims = new Set<string>();
  for (const [number] of text.matchAll(NUMBER)) if (!saidNumbers.has(digits(number))) claims.add(number);
  for (const [, quoted] of summary.normalize('NFKC').matchAll(QUOTED)) if (!said.includes(normalise(quoted))) claims.add(quoted);
  for (const match of summary.normalize('NFKC').matchAll(CAPITALISED)) {
    const before = summary.normalize('NFKC').slice(0, match.index).trimEnd();
    const startsSentence = before === '' || /[.!?。！？:：]$/u.test(before);
    if (!startsSentence && !said.includes(normalise(match[0]))) claims.add(match[0]);
  }
  return [...claims];
}
