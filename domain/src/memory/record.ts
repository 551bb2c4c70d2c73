import { z } from 'zod';

export const MemoryKind = z.enum(['working', 'episodic', 'semantic', 'procedural', 'relational']);
export type MemoryKind = z.infer<typeof MemoryKind>;

export const MemoryStatus = z.enum(['candidate', 'active', 'disputed', 'superseded', 'expired', 'deleted', 'purged']);
export type MemoryStatus = z.infer<typeof MemoryStatus>;

/** Statuses that recall may return. */
export const RECALLABLE_STATUSES: readonly MemoryStatus[] = ['active', 'disputed'];

export const Sensitivity = z.enum(['public', 'internal', 'confidential', 'restricted']);
export type Sensitivity = z.infer<typeof Sensitivity>;

/** public < internal < confidential < restricted */
export const SENSITIVITY_RANK: Record<Sensitivity, number> = { public: 0, internal: 1, confidential: 2, restricted: 3 };

export const SourceTrust = z.enum(['authoritative', 'certified', 'user', 'external', 'model']);
export type SourceTrust = z.infer<typeof SourceTrust>;

/** How far a source is believed when two facts disagree: higher wins. */
export const SOURCE_TRUST_RANK: Record<SourceTrust, number> = { authoritative: 4, certified: 3, user: 2, external: 1, model: 0 };

export const RetentionClass = z.enum(['session', 'standard', 'long_term', 'legal_hold']);
export type RetentionClass = z.infer<typeof RetentionClass>;

const IsoDate = z.iso.datetime({ offset: true });

export const Fact = z.object({
  entity: z.string().min(1).max(500),
  attribute: z.string().min(1).max(200),
  value: z.string().min(1).max(4000),
  validFrom: IsoDate.optional(),
  validTo: IsoDate.optional(),
});
export type Fact = z.infer<typeof Fact>;

/** A name or id that index adapters and keys may delimit with control characters, so it contains none. */
const Label = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]+$/u, 'contains no control characters');

/** A named procedure (procedural memory): a new version supersedes the old one for new tasks. */
export const Procedure = z.object({
  name: Label(200),
  version: z.number().int().min(1),
  steps: z.array(z.string().min(1).max(4000)).min(1).max(50),
  /** When the procedure applies, or what must hold before it is followed. */
  conditions: z.array(z.string().min(1).max(4000)).max(50).optional(),
});
export type Procedure = z.infer<typeof Procedure>;

export const EntityType = z.enum(['person', 'team', 'project', 'customer', 'contract', 'other']);
export type EntityType = z.infer<typeof EntityType>;

/** Something a relation connects: `person:li-wei`, `project:apollo`. */
export const EntityRef = z.object({ type: EntityType, id: Label(200) });
export type EntityRef = z.infer<typeof EntityRef>;

/** An edge (relational memory): `from` stands in `relation` to `to`, over the record's valid time. */
export const Relation = z.object({ from: EntityRef, relation: Label(100), to: EntityRef });
export type Relation = z.infer<typeof Relation>;

/**
 * The content of a memory: text (its searchable rendering, always present)
 * plus the structure of its kind, when it has one: the fact of a semantic
 * memory, the procedure of a procedural one, the edge of a relational one.
 */
export const MemoryContent = z.object({
  text: z.string().min(1).max(100_000),
  fact: Fact.optional(),
  procedure: Procedure.optional(),
  relation: Relation.optional(),
});
export type MemoryContent = z.infer<typeof MemoryContent>;

/**
 * What a derived record inherits from everything upstream of it, beyond its
 * direct inputs: every ancestor's id, owner and project (a legal hold on any
 * of them covers the record), and the earliest expiry among them. Computed
 * once, when the record is derived (lineage never changes afterwards), so a
 * hold placed later on an ancestor is resolved at read time without walking
 * the lineage graph. Internal: never part of an API answer (`withoutAncestry`).
 */
export const Ancestry = z.object({
  ids: z.array(z.string()),
  owners: z.array(z.string()),
  projects: z.array(z.string()),
  /**
   * The conversations (`session`) of every ancestor: a summary of session S's turns joins a recall scoped
   * to S. Absent on records derived before it was kept (a rebuild of the views derives them again).
   */
  sessions: z.array(z.string()).optional(),
  expiresAt: IsoDate.nullable(),
});
export type Ancestry = z.infer<typeof Ancestry>;

/** Where a record's source event came from: the ingest event's `source.system` and `source.channel`. */
export const SourceRef = z.object({ system: z.string(), channel: z.string().optional() });
export type SourceRef = z.infer<typeof SourceRef>;

export const Provenance = z.object({
  sourceEventIds: z.array(z.string()),
  parentIds: z.array(z.string()),
  ancestry: Ancestry.optional(),
  rule: z.string(),
  ruleVersion: z.string(),
  modelVersion: z.string().optional(),
  promptVersion: z.string().optional(),
});
export type Provenance = z.infer<typeof Provenance>;

export const MemoryPolicy = z.object({
  owner: z.string(),
  roles: z.array(z.string()),
  purposes: z.array(z.string()),
  sensitivity: Sensitivity,
  /** The business project the record belongs to, when there is one (ABAC attribute). */
  project: z.string().optional(),
  jurisdiction: z.string().optional(),
});
export type MemoryPolicy = z.infer<typeof MemoryPolicy>;

/**
 * The rule that settled a conflict between two facts, in order of
 * precedence. `adjudication` is a decision no rule could make: a tie is left
 * disputed for an authorised subject to adjudicate (paper, section 5.2 'Consolidation', rule 4), and
 * that subject's verdict is recorded under the same name, with `by`.
 * `procedure_version` is not about facts: a procedure's higher version
 * supersedes its earlier ones. `last_write` is never decided by ELMA itself:
 * it is the evaluation's ablation without conflict rules (the later write
 * supersedes, docs/evaluation-method.md).
 */
export const ConflictRule = z.enum([
  'explicit_correction',
  'source_authority',
  'later_valid_time',
  'confidence',
  'adjudication',
  'procedure_version',
  'last_write',
]);
export type ConflictRule = z.infer<typeof ConflictRule>;

/** A memory record (paper, section 3.2 'Formal definition of memory'). Times are ISO strings so the record round-trips through JSON unchanged. */
export const MemoryRecord = z.object({
  id: z.string(),
  tenant: z.string(),
  subject: z.string(),
  kind: MemoryKind,
  content: MemoryContent,
  validFrom: IsoDate,
  validTo: IsoDate.nullable(),
  recordedAt: IsoDate,
  policy: MemoryPolicy,
  provenance: Provenance,
  confidence: z.number().min(0).max(1),
  sourceTrust: SourceTrust,
  tainted: z.boolean(),
  /**
   * Its text reads as instructions to an AI (`detectInstructions`) and came
   * from an external, tool or model channel: recall packs it as quoted data,
   * never as an instruction. Decided once, at ingest, on the source event;
   * derived records carry it when any input does. Absent: not flagged.
   */
  instructionLike: z.boolean().optional(),
  /**
   * The systems and channels of the events it was derived from (one for a record extracted from an event,
   * the union of its inputs' for a derived one), sorted: what a recall scoped by `filter.sources` matches.
   * Fixed when the record is derived; its later versions carry it unchanged. Absent: no source event
   * (an explicit memory citing none), or a record indexed before it was kept (a rebuild fills it).
   */
  sources: z.array(SourceRef).optional(),
  usage: z.object({ retrieved: z.number().int(), adopted: z.number().int(), lastUsedAt: IsoDate.nullable() }),
  version: z.number().int().min(1),
  status: MemoryStatus,
  retention: z.object({ class: RetentionClass, expiresAt: IsoDate.nullable() }),
  /**
   * The session or task a working memory belongs to: recall returns it only to
   * a request naming the same session. On a record extracted from an ingested
   * event, the conversation the event was said in (its `session`): recall
   * smooths over an episode's neighbouring turns, and a recall scoped to the
   * session (`filter.sessions`) finds it; it does not restrict who sees it.
   */
  session: z.string().optional(),
  /** Transaction time of this version; absent on version 1, whose transaction time is `recordedAt`. */
  revisedAt: IsoDate.optional(),
  /** An explicit correction by an authorised subject: it wins a conflict before any other rule. */
  correction: z.boolean().optional(),
  /** Why this version's status or validTo changed: the rule, the records it was decided against, when and by whom. */
  resolution: z.object({ rule: ConflictRule, against: z.array(z.string()), decidedAt: IsoDate, by: z.string().optional() }).optional(),
});
export type MemoryRecord = z.infer<typeof MemoryRecord>;

/** When this version of the record was written (bitemporal transaction time). */
export const transactionTime = (record: Pick<MemoryRecord, 'recordedAt' | 'revisedAt'>): string => record.revisedAt ?? record.recordedAt;

/** A purpose name (`support`, `performance_review`): no control characters, which index adapters use as delimiters. */
export const Purpose = z
  .string()
  .min(1)
  .max(50)
  .regex(/^[^\p{Cc}]+$/u, 'purposes contain no control characters');
