import { type ConflictRule, type MemoryRecord, type MemoryStatus, SOURCE_TRUST_RANK, transactionTime } from './record';

/**
 * Conflicting facts (paper, section 5.2 'Consolidation', rule 4): two semantic memories
 * that give different values for the same entity and attribute over
 * overlapping valid time. A conflict is settled by a fixed order of rules, or
 * else left as state (`disputed`); it never overwrites a record. Every change
 * is a new version of the record that says which rule decided it.
 */

export type ConflictDecision =
  { kind: 'resolved'; rule: ConflictRule; winner: string; loser: string; effect: 'supersede' | 'bound' } | { kind: 'disputed' };

const normalise = (text: string) => text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();

/** The identity of what a fact is about: entity and attribute, normalised, joined by a unit separator. */
export const factKey = (fact: { entity: string; attribute: string }): string =>
  `${normalise(fact.entity)}\u001f${normalise(fact.attribute)}`;

/** Whether two fact values say the same thing, up to case, width and whitespace. */
export const sameValue = (a: string, b: string): boolean => normalise(a) === normalise(b);

// Instants, not strings: the same moment may be written with different offsets.
const instant = (iso: string) => Date.parse(iso);

/** Whether two half-open valid-time intervals [validFrom, validTo) overlap; a null validTo is open. */
export function validOverlap(a: { validFrom: string; validTo: string | null }, b: { validFrom: string; validTo: string | null }): boolean {
  const aStartsBeforeBEnds = b.validTo === null || instant(a.validFrom) < instant(b.validTo);
  const bStartsBeforeAEnds = a.validTo === null || instant(b.validFrom) < instant(a.validTo);
  return aStartsBeforeBEnds && bStartsBeforeAEnds;
}

const RECALLABLE: readonly MemoryStatus[] = ['active', 'disputed'];

/** Whether `candidate` contradicts `other`, a fact that recall may still return. */
export function conflictsWith(candidate: MemoryRecord, other: MemoryRecord): boolean {
  const a = candidate.content.fact;
  const b = other.content.fact;
  return (
    candidate.kind === 'semantic' &&
    other.kind === 'semantic' &&
    a !== undefined &&
    b !== undefined &&
    candidate.tenant === other.tenant &&
    candidate.id !== other.id &&
    RECALLABLE.includes(other.status) &&
    factKey(a) === factKey(b) &&
    validOverlap(candidate, other) &&
    !sameValue(a.value, b.value)
  );
}

const CONFIDENCE_EPSILON = 1e-9;

/**
 * How conflicting facts are settled: by ELMA's rules (`resolveConflict`), or,
 * for the evaluation's ablation without dispute state and conflict rules only
 * (docs/evaluation-method.md), by `lastWriteWins`. Never configurable by an
 * operator: `openElma` takes it as an evaluation option.
 */
export type ConflictSettlement = 'rules' | 'last-write-wins';

/**
 * The ablation's settlement: whichever was written later (transaction time)
 * supersedes the other, whatever corrections, sources, valid times or
 * confidences say; nothing is ever disputed. `incoming` is the fact being
 * written, so it wins a tie: it reached the log after the other.
 */
export function lastWriteWins(incoming: MemoryRecord, other: MemoryRecord): ConflictDecision {
  const otherLater = instant(transactionTime(other)) > instant(transactionTime(incoming));
  const [winner, loser] = otherLater ? [other, incoming] : [incoming, other];
  return { kind: 'resolved', rule: 'last_write', winner: winner.id, loser: loser.id, effect: 'supersede' };
}

/**
 * Which of two conflicting facts holds, by the first rule that tells them
 * apart: an explicit correction, then source authority, then later valid time,
 * then confidence. The later valid time does not make the earlier fact wrong,
 * only over: it is bounded (validTo = the winner's validFrom) and stays active
 * so that as-of queries before the change still see it. A tie on every rule is
 * a dispute. Symmetric: swapping the arguments gives the same decision.
 */
export function resolveConflict(a: MemoryRecord, b: MemoryRecord): ConflictDecision {
  const resolved = (
    rule: ConflictRule,
    winner: MemoryRecord,
    loser: MemoryRecord,
    effect: 'supersede' | 'bound' = 'supersede',
  ): ConflictDecision => ({
    kind: 'resolved',
    rule,
    winner: winner.id,
    loser: loser.id,
    effect,
  });
  const aCorrects = a.correction === true;
  const bCorrects = b.correction === true;
  if (aCorrects !== bCorrects) return aCorrects ? resolved('explicit_correction', a, b) : resolved('explicit_correction', b, a);
  const aRank = SOURCE_TRUST_RANK[a.sourceTrust];
  const bRank = SOURCE_TRUST_RANK[b.sourceTrust];
  if (aRank !== bRank) return aRank > bRank ? resolved('source_authority', a, b) : resolved('source_authority', b, a);
  const aFrom = instant(a.validFrom);
  const bFrom = instant(b.validFrom);
  if (aFrom !== bFrom) return aFrom > bFrom ? resolved('later_valid_time', a, b, 'bound') : resolved('later_valid_time', b, a, 'bound');
  if (Math.abs(a.confidence - b.confidence) > CONFIDENCE_EPSILON) {
    return a.confidence > b.confidence ? resolved('confidence', a, b) : resolved('confidence', b, a);
  }
  return { kind: 'disputed' };
}

/** A record on its way to a revision: its stored version and what the decisions so far did to it. */
interface Pending {
  stored: MemoryRecord;
  status: MemoryStatus;
  validTo: string | null;
  rule?: ConflictRule;
  /** The records whose decisions changed this one, in the order decided. */
  decidedAgainst: string[];
}

const pending = (stored: MemoryRecord): Pending => ({ stored, status: stored.status, validTo: stored.validTo, decidedAgainst: [] });

const asRecord = (p: Pending): MemoryRecord => ({ ...p.stored, status: p.status, validTo: p.validTo });

const earlier = (a: string | null, b: string): string => (a !== null && instant(a) <= instant(b) ? a : b);

/** What `decision` between `p` and `other` does to `p`; `p` itself when nothing changes. */
function apply(p: Pending, decision: ConflictDecision, other: MemoryRecord): Pending {
  const changed = (change: Partial<Pending> & { rule: ConflictRule }): Pending => ({
    ...p,
    ...change,
    decidedAgainst: [...p.decidedAgainst, other.id],
  });
  if (decision.kind === 'disputed') {
    // A dispute already on record is not news: re-settling it must not write another version.
    const known = p.stored.status === 'disputed' && (p.stored.resolution?.against ?? []).includes(other.id);
    return known ? p : changed({ status: 'disputed', rule: 'adjudication' });
  }
  if (decision.loser !== p.stored.id) return p;
  if (decision.effect === 'supersede') return changed({ status: 'superseded', rule: decision.rule });
  // Bounding only ever narrows: an existing validTo earlier than the winner's start stays.
  const validTo = earlier(p.validTo, other.validFrom);
  return validTo === p.validTo ? p : changed({ validTo, rule: decision.rule });
}

/** The next version of a changed record, or nothing when no decision changed it. */
function revision(p: Pending, at: string): MemoryRecord | undefined {
  if (p.rule === undefined || p.decidedAgainst.length === 0) return undefined;
  // A record that stays disputed stays disputed with everyone it was disputed with before.
  const stillDisputedWith = p.stored.status === 'disputed' && p.status === 'disputed' ? (p.stored.resolution?.against ?? []) : [];
  return {
    ...p.stored,
    status: p.status,
    validTo: p.validTo,
    version: p.stored.version + 1,
    revisedAt: at,
    resolution: { rule: p.rule, against: [...new Set([...stillDisputedWith, ...p.decidedAgainst])], decidedAt: at },
  };
}

/** The latest version of each record, by id. */
function latest(records: MemoryRecord[]): Map<string, MemoryRecord> {
  const byId = new Map<string, MemoryRecord>();
  for (const record of records) {
    const seen = byId.get(record.id);
    if (!seen || record.version > seen.version) byId.set(record.id, record);
  }
  return byId;
}

const byTransactionTime = (a: MemoryRecord, b: MemoryRecord) =>
  instant(transactionTime(a)) - instant(transactionTime(b)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Statuses in which an incoming fact still takes part in conflicts (a candidate is checked before it turns active). */
const CONTENDING: readonly MemoryStatus[] = ['candidate', 'active', 'disputed'];

/**
 * The revisions to store when `incoming` meets the facts in `current`: it is
 * decided against each fact it conflicts with, oldest transaction time first,
 * and every record whose status or validTo changes gets a new version
 * (version + 1, revisedAt `at`, the resolution that changed it). `incoming`
 * is revised at most once, in its final state, against every record that
 * changed it; once superseded it decides nothing further. Records that do not
 * change are not revised, so settling again against the revisions is a no-op.
 * `current` may hold several versions of a record (only the latest counts),
 * including versions of `incoming` itself, which then stand in for it.
 * Deterministic: `at` comes from the caller. `settlement` is ELMA's rules
 * unless the evaluation's ablation asks for last write wins.
 */
export function settleConflicts(
  incoming: MemoryRecord,
  current: MemoryRecord[],
  at: string,
  settlement: ConflictSettlement = 'rules',
): MemoryRecord[] {
  const known = latest([incoming, ...current]);
  const self = known.get(incoming.id) ?? incoming;
  if (!CONTENDING.includes(self.status)) return [];
  let mine = pending(self);
  const theirs: Pending[] = [];
  const others = [...known.values()].filter((record) => record.id !== self.id).sort(byTransactionTime);
  for (const other of others) {
    if (mine.status === 'superseded') break;
    if (!conflictsWith(asRecord(mine), other)) continue;
    const decision = settlement === 'rules' ? resolveConflict(asRecord(mine), other) : lastWriteWins(asRecord(mine), other);
    mine = apply(mine, decision, other);
    theirs.push(apply(pending(other), decision, asRecord(mine)));
  }
  return [...theirs, mine].flatMap((p) => revision(p, at) ?? []);
}

/**
 * The revision of the episode a fact was extracted from, once a conflict changed that fact: the episode
 * states the same value in words, so it shares the fact's fate. Superseded (a higher-trust source or an
 * explicit correction won) makes it superseded; a narrower validity (a later value took over) bounds it
 * the same way, so that recall presents it as history after that time; a dispute marks it disputed. Only an
 * episode from the same event as the fact (`sourceEventIds` equal, extracted at ingest) follows it.
 * Undefined when nothing changes: replaying gives no new version.
 */
export function episodeFollowingFact(fact: MemoryRecord, episode: MemoryRecord): MemoryRecord | undefined {
  if (episode.kind !== 'episodic' || fact.kind !== 'semantic' || episode.tenant !== fact.tenant) return undefined;
  const sameEvent =
    fact.provenance.sourceEventIds.length === 1 &&
    episode.provenance.sourceEventIds.length === 1 &&
    fact.provenance.sourceEventIds[0] === episode.provenance.sourceEventIds[0] &&
    fact.provenance.rule === episode.provenance.rule;
  if (!sameEvent || !RECALLABLE.includes(episode.status) || !fact.resolution) return undefined;
  const followed: readonly MemoryStatus[] = ['active', 'disputed', 'superseded'];
  const status = followed.includes(fact.status) ? fact.status : episode.status;
  const validTo =
    fact.validTo === null ? episode.validTo : episode.validTo === null ? fact.validTo : earlier(episode.validTo, fact.validTo);
  if (status === episode.status && validTo === episode.validTo) return undefined;
  return {
    ...episode,
    status,
    validTo,
    version: episode.version + 1,
    revisedAt: fact.revisedAt ?? fact.resolution.decidedAt,
    resolution: fact.resolution,
  };
}
