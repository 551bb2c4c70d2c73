import { SYSTEM_ROLE, type AuditEntry } from '../audit/audit';
import { deletionClosure } from '../erasure/closure';
import { isHeld, type LegalHold } from '../legal-hold/legal-hold';
import type { EventIngested } from '../ingest/schema';
import type { LineageEntry } from '../memory-index/port';
import { episodicIdFor } from '../memory/derive';
import type { MemoryKind, MemoryRecord } from '../memory/record';
import { FORMAT_VERSIONS } from '../shared/formats';
import { SUBJECT_PSEUDONYM } from '../streams';
import {
  SubjectExport,
  type ExportCounts,
  type ExportedEvent,
  type ExportedRecord,
  type ProcessingEntry,
  type WithheldRecord,
} from './export';

/** What the export of one subject is assembled from; every collection is the tenant's, unfiltered. */
export interface SubjectExportInput {
  tenant: string;
  requestId: string;
  subject: string;
  subjectPseudonym: string;
  /** The subject's name in the audit trail (the audit log's keyed pseudonym of the subject id). */
  auditSubject: string;
  producedAt: string;
  expiresAt: string;
  /** Identity and lineage of every record of the tenant. */
  lineage: readonly LineageEntry[];
  /** The current version of the records `recordsOf` names (absent: gone since the lineage was read). */
  records: ReadonlyMap<string, MemoryRecord>;
  holds: readonly LegalHold[];
  audit: Iterable<AuditEntry>;
  /** The events of the subject's stream that are not erased; their content is not read. */
  events?: readonly Omit<EventIngested, 'content'>[];
}

/**
 * The records an export of `subject` covers: the subject's own (by subject
 * or owner) and everything derived from them, to any depth (the erasure's
 * deletion closure D*: what an erasure of the subject would reach).
 */
export function recordsOf(subject: string, lineage: readonly LineageEntry[]): string[] {
  const own = lineage.filter((entry) => entry.subject === subject || entry.owner === subject).map((entry) => entry.id);
  return deletionClosure(own, lineage).recordIds;
}

/**
 * Assembles everything ELMA holds about one data subject (pure: time comes in
 * as `producedAt`). A record whose lineage draws only on the subject is
 * exported whole; a record that also draws on other data subjects (an
 * explicit memory citing several people's events, a view over them) is
 * listed by id with the reason, so nothing of another subject leaks. Restricted
 * and held records are included and marked. The processing history is the
 * audit entries about the subject or any of these records, with other
 * subjects' record ids left out.
 */
export function assembleSubjectExport(input: SubjectExportInput): SubjectExport {
  const { subject, lineage } = input;
  const byId = new Map(lineage.map((entry) => [entry.id, entry]));
  const episodicOf = new Map<string, LineageEntry>();
  for (const entry of lineage) if (entry.kind === 'episodic') for (const e of entry.sourceEventIds) episodicOf.set(e, entry);
  const covered = recordsOf(subject, lineage).filter((id) => input.records.has(id));
  const coveredSet = new Set(covered);

  const records: ExportedRecord[] = [];
  const withheld: WithheldRecord[] = [];
  for (const id of covered) {
    const record = input.records.get(id)!;
    const marks = {
      restricted: record.policy.sensitivity === 'restricted',
      legalHolds: input.holds.filter((hold) => isHeld(record, [hold])).map((hold) => hold.id),
    };
    const sources = upstreamOf(record, byId, episodicOf);
    const others = new Set<string>();
    for (const owner of [record.subject, record.policy.owner, ...(record.provenance.ancestry?.owners ?? [])]) {
      if (owner !== subject) others.add(`owner:${owner}`);
    }
    for (const source of sources.values()) if (source.subject !== subject || source.owner !== subject) others.add(`record:${source.id}`);
    if (others.size > 0) {
      const mine = [...sources.values()].filter((s) => s.subject === subject && s.owner === subject && coveredSet.has(s.id));
      withheld.push({
        id,
        kind: record.kind,
        status: record.status,
        recordedAt: record.recordedAt,
        reason: 'mixed_subjects',
        fromRecordIds: mine.map((s) => s.id).sort(),
        otherSources: [...sources.values()].filter((s) => s.subject !== subject || s.owner !== subject).length,
        marks,
      });
      continue;
    }
    records.push(exportedRecord(record, marks, derivedFrom(id, covered, byId)));
  }

  const events: ExportedEvent[] = (input.events ?? [])
    .filter((event) => event.subject === subject)
    .map((event) => ({
      id: event.eventId,
      occurredAt: event.occurredAt,
      recordedAt: event.recordedAt,
      activity: event.activity,
      source: event.source,
      ...(event.sourceTrust !== undefined ? { sourceTrust: event.sourceTrust } : {}),
      actor: describedEventActor(event.actor, subject),
      ...(event.session !== undefined ? { session: event.session } : {}),
      purposes: event.purposes,
      sensitivity: event.sensitivity,
      retention: event.retention,
      recordId: episodicIdFor(event.eventId),
    }));
  const eventIds = new Set(events.map((e) => e.id));
  const processing = [...input.audit].flatMap((entry) => processingEntry(entry, input, coveredSet, eventIds));
  const byKind: Partial<Record<MemoryKind, number>> = {};
  for (const r of records) byKind[r.kind] = (byKind[r.kind] ?? 0) + 1;
  const counts: ExportCounts = {
    records: records.length,
    events: events.length,
    byKind,
    restricted: records.filter((r) => r.marks.restricted).length,
    held: records.filter((r) => r.marks.legalHolds.length > 0).length,
    withheld: withheld.length,
    processing: processing.length,
  };
  return SubjectExport.parse({
    format: 'elma.subject-export',
    formatVersion: FORMAT_VERSIONS.subjectExport,
    tenant: input.tenant,
    requestId: input.requestId,
    subject,
    subjectPseudonym: input.subjectPseudonym,
    producedAt: input.producedAt,
    expiresAt: input.expiresAt,
    counts,
    records,
    events,
    withheld,
    processing,
  });
}

/** Every record upstream of `record` the lineage knows: parents, the records of its source events, and theirs. */
function upstreamOf(
  record: MemoryRecord,
  byId: ReadonlyMap<string, LineageEntry>,
  episodicOf: ReadonlyMap<string, LineageEntry>,
): Map<string, LineageEntry> {
  const found = new Map<string, LineageEntry>();
  const queue = [...record.provenance.parentIds, ...record.provenance.sourceEventIds.flatMap((e) => episodicOf.get(e)?.id ?? [])];
  for (let i = 0; i < queue.length; i++) {
    const entry = byId.get(queue[i]);
    if (!entry || found.has(entry.id) || entry.id === record.id) continue;
    found.set(entry.id, entry);
    queue.push(...entry.parentIds);
  }
  return found;
}

/** The covered records whose parents include `id`. */
function derivedFrom(id: string, covered: readonly string[], byId: ReadonlyMap<string, LineageEntry>): string[] {
  return covered.filter((other) => byId.get(other)?.parentIds.includes(id)).sort();
}

function exportedRecord(record: MemoryRecord, marks: ExportedRecord['marks'], derivedRecordIds: string[]): ExportedRecord {
  const { ancestry: _internal, ...provenance } = record.provenance;
  return {
    id: record.id,
    kind: record.kind,
    status: record.status,
    version: record.version,
    content: record.content,
    validFrom: record.validFrom,
    validTo: record.validTo,
    recordedAt: record.recordedAt,
    ...(record.revisedAt !== undefined ? { revisedAt: record.revisedAt } : {}),
    ...(record.session !== undefined ? { session: record.session } : {}),
    provenance,
    derivedRecordIds,
    purposes: record.policy.purposes,
    sensitivity: record.policy.sensitivity,
    owner: record.policy.owner,
    ...(record.policy.project !== undefined ? { project: record.policy.project } : {}),
    ...(record.policy.jurisdiction !== undefined ? { jurisdiction: record.policy.jurisdiction } : {}),
    retention: record.retention,
    confidence: record.confidence,
    sourceTrust: record.sourceTrust,
    tainted: record.tainted,
    ...(record.correction !== undefined ? { correction: record.correction } : {}),
    ...(record.resolution !== undefined ? { resolution: record.resolution } : {}),
    usage: record.usage,
    marks,
  };
}

/**
 * Who acted, as the subject's export tells it: the subject themself (by their pseudonym, or by their id in
 * entries written before subjects were told apart), anyone else by role only. Never an id or a pseudonym:
 * another data subject's would disclose them (and outlive their erasure in every copy of the export), and a
 * staff member's is not the subject's to have.
 */
export function describedActor(
  entry: Pick<AuditEntry, 'actor' | 'actorRoles'>,
  subject: Pick<SubjectExportInput, 'subject' | 'subjectPseudonym'>,
): string {
  if (entry.actor === subject.subjectPseudonym || entry.actor === subject.subject) return 'the data subject';
  if (SUBJECT_PSEUDONYM.test(entry.actor)) return 'another data subject';
  const roles = entry.actorRoles;
  if (roles === undefined) return 'someone else (the entry predates recorded roles)';
  if (roles.includes(SYSTEM_ROLE)) return 'ELMA itself';
  if (roles.length === 0) return 'a caller without a role';
  return `a staff member or service with role${roles.length > 1 ? 's' : ''} ${roles.join(', ')}`;
}

/**
 * Who sent an event, as the subject's export tells it: the subject themself, or anyone else undescribed. An event
 * records its caller's token subject and no role, and that caller may be another data subject, whose id must not
 * reach this export (nor outlive their erasure in it); the event's `source` still names the system it came from.
 */
export function describedEventActor(actor: string, subject: string): string {
  return actor === subject ? 'the data subject' : 'a caller other than the data subject';
}

/** An audit entry about the subject (by its audit pseudonym), one of its records or events; other ids are dropped. */
function processingEntry(
  entry: AuditEntry,
  input: SubjectExportInput,
  covered: ReadonlySet<string>,
  events: ReadonlySet<string>,
): ProcessingEntry[] {
  const recordIds = entry.resourceIds.filter((id) => covered.has(id));
  const eventIds = entry.resourceIds.filter((id) => events.has(id));
  if (entry.subject !== input.auditSubject && recordIds.length === 0 && eventIds.length === 0) return [];
  return [
    {
      seq: entry.seq,
      time: entry.time,
      actor: describedActor(entry, input),
      operation: entry.operation,
      effect: entry.decision.effect,
      rule: entry.decision.rule,
      recordIds,
      eventIds,
      operations: entry.resourceIds.filter((id) => /^(erasure|recall|subject-access)\/[A-Za-z0-9_-]+$/.test(id)),
      requestId: entry.requestId,
      hash: entry.hash,
    },
  ];
}
