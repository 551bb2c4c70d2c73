import { Inject, UseGuards } from '@nestjs/common';
import { Args, ID, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import {
  IngestRequest,
  PromoteMemoryRequest,
  RecallFeedback,
  RecallRequest,
  WriteMemoryRequest,
  parseOrThrow,
  type MemoryRecord,
  type Principal,
} from '@elma/domain';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { INGEST, MEMORIES, RECALL, type Ingest, type Memories, type Recall } from '../http/tokens';
import { ParamTypes } from './param-types';
import { withoutNulls } from './without-nulls';
import {
  EventInput,
  IngestResultType,
  MemoryInput,
  MemoryPageType,
  MemoryType,
  PromoteInput,
  RecallInput,
  RecallFeedbackResultType,
  RecallResultType,
  WriteMemoryResultType,
} from './types';

/**
 * The REST operations, as GraphQL. Resolvers only map; the services do the
 * work. Inputs are checked against the same zod schemas as the REST bodies
 * (GraphQL's types say less: lengths, ranges, unions), after dropping the
 * nulls GraphQL sends for omitted fields.
 */
@Resolver()
@UseGuards(AuthGuard)
export class MemoryResolver {
  constructor(
    @Inject(INGEST) private readonly ingestion: Ingest,
    @Inject(MEMORIES) private readonly memories: Memories,
    @Inject(RECALL) private readonly recalls: Recall,
  ) {}

  @Query(() => MemoryType)
  @ParamTypes(Object, String, String, String)
  async memory(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('id', { type: () => ID }) id: string,
    @Args('session', {
      type: () => String,
      nullable: true,
      description: "A working memory's session: only there (or by its owner) can it be read.",
    })
    session: string | null,
  ): Promise<MemoryType> {
    return toGraphql(await this.memories.get(caller, id, { requestId, session: session ?? undefined }));
  }

  @Query(() => MemoryPageType, {
    name: 'memories',
    description: 'The memories the caller may read, a page at a time, as GET /v1/memories lists them.',
  })
  @ParamTypes(Object, String, String, String, String, String, String, String, Number)
  async listMemories(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('subject', { type: () => String, nullable: true }) subject: string | null,
    @Args('kind', { type: () => String, nullable: true }) kind: string | null,
    @Args('status', { type: () => String, nullable: true }) status: string | null,
    @Args('purpose', { type: () => String, nullable: true }) purpose: string | null,
    @Args('session', { type: () => String, nullable: true }) session: string | null,
    @Args('cursor', { type: () => String, nullable: true }) cursor: string | null,
    @Args('limit', { type: () => Int, nullable: true }) limit: number | null,
  ): Promise<MemoryPageType> {
    const query = withoutNulls({ subject, kind, status, purpose, session, cursor, limit });
    const page = await this.memories.list(caller, query, requestId);
    return { items: page.items.map(toGraphql), nextCursor: page.nextCursor };
  }

  @Query(() => [MemoryType], { description: 'Every version of a memory the caller may read, oldest first.' })
  @ParamTypes(Object, String, String, String, String)
  async memoryVersions(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('id', { type: () => ID }) id: string,
    @Args('purpose', { type: () => String, nullable: true }) purpose: string | null,
    @Args('session', { type: () => String, nullable: true }) session: string | null,
  ): Promise<MemoryType[]> {
    const { items } = await this.memories.versions(caller, id, withoutNulls({ purpose, session }), requestId);
    return items.map(toGraphql);
  }

  @Query(() => RecallResultType)
  @ParamTypes(Object, String, RecallInput)
  recall(@Caller() caller: Principal, @RequestId() requestId: string, @Args('input', { type: () => RecallInput }) input: RecallInput) {
    return this.recalls.recall(caller, parseOrThrow(RecallRequest, withoutNulls(input)), requestId);
  }

  @Mutation(() => RecallFeedbackResultType)
  @ParamTypes(Object, String, String, Array)
  recallFeedback(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('recallId', { type: () => ID }) recallId: string,
    @Args('adopted', { type: () => [ID] }) adopted: string[],
  ) {
    return this.recalls.feedback(caller, recallId, parseOrThrow(RecallFeedback, { adopted }), requestId);
  }

  @Mutation(() => IngestResultType)
  @ParamTypes(Object, String, Array)
  ingestEvents(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('events', { type: () => [EventInput] }) events: EventInput[],
  ) {
    return this.ingestion.ingest(caller, parseOrThrow(IngestRequest, { events: events.map(withoutNulls) }), requestId);
  }

  @Mutation(() => WriteMemoryResultType)
  @ParamTypes(Object, String, MemoryInput)
  async writeMemory(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('input', { type: () => MemoryInput }) input: MemoryInput,
  ) {
    const result = await this.memories.write(caller, parseOrThrow(WriteMemoryRequest, withoutNulls(input)), requestId);
    return { ...result, memory: toGraphql(result.memory) };
  }

  @Mutation(() => WriteMemoryResultType)
  @ParamTypes(Object, String, String, PromoteInput)
  async promoteMemory(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Args('id', { type: () => ID }) id: string,
    @Args('input', { type: () => PromoteInput, nullable: true }) input: PromoteInput | null,
  ) {
    const result = await this.memories.promote(caller, id, parseOrThrow(PromoteMemoryRequest, withoutNulls(input ?? {})), requestId);
    return { ...result, memory: toGraphql(result.memory) };
  }
}

function toGraphql(record: MemoryRecord): MemoryType {
  return {
    ...record,
    text: record.content.text,
    fact: record.content.fact,
    procedure: record.content.procedure,
    relation: record.content.relation,
    expiresAt: record.retention.expiresAt,
    sensitivity: record.policy.sensitivity,
    purposes: record.policy.purposes,
    instructionLike: record.instructionLike === true,
  };
}
