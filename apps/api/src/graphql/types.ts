import { Field, Float, ID, InputType, Int, ObjectType } from '@nestjs/graphql';

/**
 * GraphQL types (code-first). Every field names its type explicitly, so the
 * schema does not depend on emitted decorator metadata. Inputs are validated
 * by the same zod schemas as REST, in the services.
 */
@ObjectType()
export class FactType {
  @Field(() => String) entity!: string;
  @Field(() => String) attribute!: string;
  @Field(() => String) value!: string;
  @Field(() => String, { nullable: true }) validFrom?: string;
  @Field(() => String, { nullable: true }) validTo?: string;
}

@ObjectType('Procedure')
export class ProcedureType {
  @Field(() => String) name!: string;
  @Field(() => Int) version!: number;
  @Field(() => [String]) steps!: string[];
  @Field(() => [String], { nullable: true }) conditions?: string[];
}

@ObjectType('Entity')
export class EntityRefType {
  @Field(() => String) type!: string;
  @Field(() => String) id!: string;
}

@ObjectType('Relation')
export class RelationType {
  @Field(() => EntityRefType) from!: EntityRefType;
  @Field(() => String) relation!: string;
  @Field(() => EntityRefType) to!: EntityRefType;
}

@ObjectType('Provenance')
export class ProvenanceType {
  @Field(() => [ID]) sourceEventIds!: string[];
  @Field(() => [ID]) parentIds!: string[];
  @Field(() => String) rule!: string;
  @Field(() => String) ruleVersion!: string;
}

@ObjectType('Memory')
export class MemoryType {
  @Field(() => ID) id!: string;
  @Field(() => String) kind!: string;
  @Field(() => String) status!: string;
  @Field(() => String) text!: string;
  @Field(() => FactType, { nullable: true }) fact?: FactType;
  @Field(() => ProcedureType, { nullable: true }) procedure?: ProcedureType;
  @Field(() => RelationType, { nullable: true }) relation?: RelationType;
  /** The session a working memory belongs to. */
  @Field(() => String, { nullable: true }) session?: string;
  /** When the record stops being recalled (a working memory's TTL), if ever. */
  @Field(() => String, { nullable: true }) expiresAt!: string | null;
  @Field(() => String) subject!: string;
  @Field(() => Int) version!: number;
  @Field(() => String) validFrom!: string;
  @Field(() => String, { nullable: true }) validTo!: string | null;
  @Field(() => String) recordedAt!: string;
  @Field(() => Float) confidence!: number;
  @Field(() => String) sourceTrust!: string;
  @Field(() => Boolean) tainted!: boolean;
  /** Instruction-like content from an external, tool or model source: recall quotes it as data. */
  @Field(() => Boolean) instructionLike!: boolean;
  @Field(() => String) sensitivity!: string;
  @Field(() => [String]) purposes!: string[];
  @Field(() => ProvenanceType) provenance!: ProvenanceType;
}

/** A page of `memories`: `nextCursor` (null on the last page) is passed as `cursor` for the next one. */
@ObjectType('MemoryPage')
export class MemoryPageType {
  @Field(() => [MemoryType]) items!: MemoryType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

@ObjectType('Citation')
export class CitationType {
  @Field(() => ID) id!: string;
  @Field(() => Int) version!: number;
  @Field(() => String) kind!: string;
  @Field(() => [ID]) sourceEventIds!: string[];
  @Field(() => String) validFrom!: string;
  @Field(() => String, { nullable: true }) validTo!: string | null;
  @Field(() => String) recordedAt!: string;
  @Field(() => Float) confidence!: number;
  @Field(() => String) sourceTrust!: string;
  @Field(() => Boolean) disputed!: boolean;
  /** The item is instruction-like content from an external, tool or model source, quoted as data in the context. */
  @Field(() => Boolean) instructionLike!: boolean;
}

/** What an item's retrieval score is made of; a part is null when it played no part. */
@ObjectType('RecallScores')
export class RecallScoresType {
  /** The BM25 route's contribution to the fused score. */
  @Field(() => Float, { nullable: true }) bm25?: number;
  /** The dense route's contribution to the fused score. */
  @Field(() => Float, { nullable: true }) dense?: number;
  /** What neighbour smoothing added. */
  @Field(() => Float, { nullable: true }) smoothing?: number;
  /** The score of an edge reached by following relations. */
  @Field(() => Float, { nullable: true }) hop?: number;
}

/** Why an item was a candidate. */
@ObjectType('RecallReason')
export class RecallReasonType {
  /** bm25, dense, both, neighbour (joined by smoothing), hop (an edge reached by following relations) or expansion. */
  @Field(() => String) route!: string;
  /** For a neighbour: the id of the hit whose score it shares. */
  @Field(() => ID, { nullable: true }) neighbourOf?: string;
  /** For a hop: the entity at which the edge was reached. */
  @Field(() => String, { nullable: true }) fromEntity?: string;
  /** For a hop: how many edges out. */
  @Field(() => Int, { nullable: true }) hop?: number;
}

@ObjectType('RecallItem')
export class RecallItemType {
  @Field(() => ID) id!: string;
  /** Position in `items`, best first: 1 for the best. */
  @Field(() => Int) rank!: number;
  @Field(() => String) kind!: string;
  @Field(() => String) text!: string;
  /** The retrieval score (fused, smoothed; for an edge, its hop's share of the best hit's). */
  @Field(() => Float) score!: number;
  @Field(() => RecallScoresType) scores!: RecallScoresType;
  /** The marginal utility the item was packed with: what `rank` orders by. */
  @Field(() => Float) utility!: number;
  @Field(() => RecallReasonType) reason!: RecallReasonType;
  @Field(() => Int) tokens!: number;
  @Field(() => CitationType) citation!: CitationType;
  /** On an edge reached by following relations: how many edges from what the query found. */
  @Field(() => Int, { nullable: true }) hop?: number;
}

@ObjectType('RecallResult')
export class RecallResultType {
  @Field(() => ID) recallId!: string;
  /** Best first: by the marginal utility each item was packed with. */
  @Field(() => [RecallItemType]) items!: RecallItemType[];
  /** The item ids in the order of `context` (the most important last). */
  @Field(() => [ID]) promptOrder!: string[];
  /** The items rendered in prompt order (`promptOrder`). */
  @Field(() => String) context!: string;
  @Field(() => Int) usedTokens!: number;
  @Field(() => Int) contextTokens!: number;
  @Field(() => Int) budgetTokens!: number;
  @Field(() => Int) candidates!: number;
}

@ObjectType('IngestedEvent')
export class IngestedEventType {
  @Field(() => ID) id!: string;
  @Field(() => String) subject!: string;
  @Field(() => Boolean) duplicate!: boolean;
}

@ObjectType('IngestResult')
export class IngestResultType {
  @Field(() => [IngestedEventType]) events!: IngestedEventType[];
  @Field(() => String) position!: string;
}

@ObjectType('WriteMemoryResult')
export class WriteMemoryResultType {
  @Field(() => MemoryType) memory!: MemoryType;
  @Field(() => String) position!: string;
  @Field(() => Boolean) duplicate!: boolean;
  /** The earlier procedure versions this write superseded. */
  @Field(() => [ID], { nullable: true }) superseded?: string[];
}

@InputType()
export class FactInput {
  @Field(() => String) entity!: string;
  @Field(() => String) attribute!: string;
  @Field(() => String) value!: string;
  @Field(() => String, { nullable: true }) validFrom?: string;
  @Field(() => String, { nullable: true }) validTo?: string;
}

@InputType()
export class ContentInput {
  @Field(() => String) text!: string;
  @Field(() => FactInput, { nullable: true }) fact?: FactInput;
}

@InputType()
export class ProcedureInput {
  @Field(() => String) name!: string;
  @Field(() => Int) version!: number;
  @Field(() => [String]) steps!: string[];
  @Field(() => [String], { nullable: true }) conditions?: string[];
}

@InputType()
export class EntityInput {
  @Field(() => String) type!: string;
  @Field(() => String) id!: string;
}

@InputType()
export class RelationInput {
  @Field(() => EntityInput) from!: EntityInput;
  @Field(() => String) relation!: string;
  @Field(() => EntityInput) to!: EntityInput;
}

/** The content of an explicit memory: text plus the structure of its kind. */
@InputType()
export class MemoryContentInput {
  @Field(() => String) text!: string;
  @Field(() => FactInput, { nullable: true }) fact?: FactInput;
  @Field(() => ProcedureInput, { nullable: true }) procedure?: ProcedureInput;
  @Field(() => RelationInput, { nullable: true }) relation?: RelationInput;
}

@InputType()
export class SourceInput {
  @Field(() => String) system!: string;
  @Field(() => String, { nullable: true }) externalId?: string;
  @Field(() => String, { nullable: true }) channel?: string;
}

@InputType()
export class EventInput {
  @Field(() => String) subject!: string;
  @Field(() => String) occurredAt!: string;
  @Field(() => String) activity!: string;
  @Field(() => ContentInput) content!: ContentInput;
  @Field(() => SourceInput) source!: SourceInput;
  @Field(() => String, { nullable: true }) sensitivity?: string;
  @Field(() => [String], { nullable: true }) purposes?: string[];
  @Field(() => String, { nullable: true }) retention?: string;
  /** The conversation the event belongs to (recall looks at the turns around a hit in it). */
  @Field(() => String, { nullable: true }) session?: string;
  @Field(() => String, { nullable: true }) idempotencyKey?: string;
}

@InputType()
export class MemoryInput {
  @Field(() => String, { nullable: true }) kind?: string;
  @Field(() => MemoryContentInput) content!: MemoryContentInput;
  @Field(() => [ID]) sourceEventIds!: string[];
  @Field(() => String, { nullable: true }) subject?: string;
  @Field(() => String, { nullable: true }) sensitivity?: string;
  @Field(() => [String], { nullable: true }) purposes?: string[];
  @Field(() => String, { nullable: true }) validFrom?: string;
  @Field(() => String, { nullable: true }) validTo?: string;
  @Field(() => Float, { nullable: true }) confidence?: number;
  @Field(() => String, { nullable: true }) retention?: string;
  @Field(() => String, { nullable: true }) idempotencyKey?: string;
  @Field(() => Int, { nullable: true }) expectedVersion?: number;
  @Field(() => String, { nullable: true }) session?: string;
  @Field(() => Int, { nullable: true }) ttlSeconds?: number;
}

@InputType()
export class PromoteInput {
  @Field(() => String, { nullable: true }) kind?: string;
  @Field(() => Float, { nullable: true }) confidence?: number;
  @Field(() => String, { nullable: true }) retention?: string;
  /** The working memory's session. */
  @Field(() => String, { nullable: true }) session?: string;
}

/** One source a recall's scope names: a system, a channel, or both. */
@InputType()
export class RecallSourceInput {
  @Field(() => String, { nullable: true }) system?: string;
  @Field(() => String, { nullable: true }) channel?: string;
}

/** What a recall is narrowed to on top of the caller's policy (`RecallFilter`): keys AND, values OR. */
@InputType()
export class RecallFilterInput {
  @Field(() => [String], { nullable: true }) subjects?: string[];
  @Field(() => [String], { nullable: true }) entities?: string[];
  @Field(() => [String], { nullable: true }) projects?: string[];
  @Field(() => [String], { nullable: true }) sessions?: string[];
  @Field(() => [RecallSourceInput], { nullable: true }) sources?: RecallSourceInput[];
  @Field(() => String, { nullable: true }) occurredAfter?: string;
  @Field(() => String, { nullable: true }) occurredBefore?: string;
  @Field(() => [String], { nullable: true }) kinds?: string[];
}

@InputType()
export class RecallInput {
  @Field(() => String) query!: string;
  @Field(() => String) purpose!: string;
  @Field(() => Int, { nullable: true }) budgetTokens?: number;
  @Field(() => [String], { nullable: true, deprecationReason: 'Use filter.kinds.' }) kinds?: string[];
  @Field(() => RecallFilterInput, { nullable: true }) filter?: RecallFilterInput;
  @Field(() => String, { nullable: true }) asOf?: string;
  @Field(() => String, { nullable: true }) knownAsOf?: string;
  @Field(() => String, { nullable: true }) consistency?: string;
  @Field(() => String, { nullable: true }) afterPosition?: string;
  @Field(() => String, { nullable: true }) session?: string;
  @Field(() => Int, { nullable: true }) hops?: number;
}

@ObjectType('ErasureStep')
export class ErasureStepType {
  @Field(() => String) step!: string;
  @Field(() => String) startedAt!: string;
  @Field(() => String) finishedAt!: string;
  @Field(() => Int) attempts!: number;
}

@ObjectType('ErasureFailure')
export class ErasureFailureType {
  @Field(() => String) code!: string;
  @Field(() => String) message!: string;
}

@ObjectType('Erasure')
export class ErasureType {
  @Field(() => ID) requestId!: string;
  @Field(() => String) reason!: string;
  @Field(() => String) status!: string;
  @Field(() => String, { nullable: true }) currentStep!: string | null;
  @Field(() => [ErasureStepType]) steps!: ErasureStepType[];
  @Field(() => Int, { nullable: true }) closureSize!: number | null;
  @Field(() => [ID]) blockedByLegalHold!: string[];
  @Field(() => String, { nullable: true }) approvalDeadline?: string;
  @Field(() => String, { nullable: true }) approvedBy?: string;
  @Field(() => String, { nullable: true }) approvedByName?: string;
  @Field(() => ErasureFailureType, { nullable: true }) failure?: ErasureFailureType;
  @Field(() => Boolean) certificateAvailable!: boolean;
}

/** A page of `erasures`, as `GET /v1/erasures` answers. */
@ObjectType('ErasurePage')
export class ErasurePageType {
  @Field(() => [ErasureType]) items!: ErasureType[];
  @Field(() => String, { nullable: true }) nextCursor!: string | null;
}

/** The scope of `requestErasure`: `type` picks which of the other fields apply (as in REST). */
@InputType()
export class ErasureScopeInput {
  @Field(() => String) type!: string;
  @Field(() => [ID], { nullable: true }) recordIds?: string[];
  @Field(() => String, { nullable: true }) subject?: string;
  @Field(() => String, { nullable: true }) from?: string;
  @Field(() => String, { nullable: true }) to?: string;
  @Field(() => String, { nullable: true }) text?: string;
  @Field(() => String, { nullable: true }) fingerprint?: string;
}

@InputType()
export class ErasureRequestInput {
  @Field(() => ErasureScopeInput) scope!: ErasureScopeInput;
  @Field(() => String) reason!: string;
}

@ObjectType('RecallFeedbackResult')
export class RecallFeedbackResultType {
  @Field(() => Int) adopted!: number;
}
