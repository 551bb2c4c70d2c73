import type { EventIngested } from '../ingest/schema';
import type { RecordMemory } from './events';
import type { MemoryRecord, SourceTrust } from './record';

export const EXTRACTION_RULE = 'ingest.extract';
export const EXTRACTION_RULE_VERSION = '1';

/** Deterministic memory ids: replaying the same event always yields the same memories (no duplicates). */
export const episodicIdFor = (eventId: string) => `mem_ep_${eventId}`;
export const semanticIdFor = (eventId: string) => `mem_se_${eventId}`;

/** The text of the semantic memory a fact becomes. */
export const factText = (fact: { entity: string; attribute: string; value: string }) => `${fact.entity} ${fact.attribute}: ${fact.value}`;

/**
 * Default trust by channel until a tenant registers authoritative sources:
 * `system` certified; `web`, `email` and `tool` (what a tool call returned)
 * external; `model` model; any other channel, or none, user.
 */
export function trustForChannel(channel: string | undefined): SourceTrust {
  switch (channel) {
    case 'system':
      return 'certified';
    case 'web':
    case 'email':
    case 'tool':
      return 'external';
    case 'model':
      return 'model';
    default:
      return 'user';
  }
}

/**
 * What memories an ingested event yields: always one episodic memory (the
 * event as remembered), plus a semantic memory when the event carries a
 * structured fact. Each points at its source event (lineage, paper, section 6.2 'Completeness of the deletion closure', condition 1).
 */
export function deriveMemories(event: EventIngested): RecordMemory[] {
  const trust = event.sourceTrust ?? trustForChannel(event.source.channel);
  const base = {
    tenant: event.tenant,
    subject: event.subject,
    recordedAt: event.recordedAt,
    policy: {
      owner: event.subject,
      roles: [],
      purposes: event.purposes,
      sensitivity: event.sensitivity,
      ...(event.project ? { project: event.project } : {}),
    },
    provenance: {
      sourceEventIds: [event.eventId],
      parentIds: [],
      rule: EXTRACTION_RULE,
      ruleVersion: EXTRACTION_RULE_VERSION,
    },
    sourceTrust: trust,
    tainted: trust === 'external' || trust === 'model',
    // Decided at ingest, on the stored event: a replay derives the same flag whatever the detector says today.
    ...(event.instructionLike ? { instructionLike: true } : {}),
    // Where the event came from, for recalls scoped by source: a pure function of the stored event, as the rest.
    // The conversation it was said in: recall smooths over an episode's neighbouring turns, and a recall scoped
    // to the session finds the episode and the fact it stated (not a visibility bound).
    ...(event.session !== undefined ? { session: event.session } : {}),
    sources: [{ system: event.source.system, ...(event.source.channel !== undefined ? { channel: event.source.channel } : {}) }],
    usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
    version: 1,
    status: 'active' as const,
    retention: { class: event.retention, expiresAt: event.expiresAt ?? null },
  };
  const episodic: MemoryRecord = {
    ...base,
    id: episodicIdFor(event.eventId),
    kind: 'episodic',
    content: { text: event.content.text },
    validFrom: event.occurredAt,
    validTo: null,
    confidence: 1,
  };
  const commands: RecordMemory[] = [{ type: 'RecordMemory', record: episodic }];
  const fact = event.content.fact;
  if (fact) {
    commands.push({
      type: 'RecordMemory',
      record: {
        ...base,
        id: semanticIdFor(event.eventId),
        kind: 'semantic',
        content: { text: factText(fact), fact },
        validFrom: fact.validFrom ?? event.occurredAt,
        validTo: fact.validTo ?? null,
        confidence: trust === 'user' || trust === 'certified' || trust === 'authoritative' ? 0.9 : 0.5,
      },
    });
  }
  return commands;
}

/**
 * The first versions of the records an ingested event yields (`deriveMemories`, each new): a pure function
 * of the stored event under rule `ingest.extract` v1. The log keeps the event, not these versions
 * (docs/adr/0014-extracted-records-derived-from-their-event.md): the live pass and a rebuild derive them
 * alike, so the rule's output for an event ingested under it must never change. A different extraction is a
 * new rule version, chosen per event.
 */
export function extractedRecords(event: EventIngested): MemoryRecord[] {
  return deriveMemories(event).map((command) => command.record);
}

/** Whether a record is an extracted first version, which the log does not hold (see `extractedRecords`). */
export const isExtractedFirstVersion = (record: MemoryRecord): boolean =>
  record.version === 1 && record.provenance.rule === EXTRACTION_RULE;
