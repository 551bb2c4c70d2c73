import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  MemoryListQuery,
  MemoryRecord,
  MemoryVersionsQuery,
  PromoteMemoryRequest,
  WriteMemoryRequest,
  withoutAncestry,
  type Principal,
} from '@elma/domain';
import { AdjudicateRequest } from '@elma/application';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ADJUDICATION, MEMORIES, type Adjudicator, type Memories } from '../http/tokens';
import { ZodBody } from '../http/zod-body';
import {
  ApiAuthenticated,
  ApiId,
  ApiJsonBody,
  ApiOk,
  ApiProblems,
  ApiQueryOf,
  jsonSchema,
  linksFrom,
  PageSchema,
  WriteResultSchema,
} from './openapi';

const Memory = jsonSchema(MemoryRecord, 'output');
const written = linksFrom('$response.body#/memory/id', {
  GetMemory: ['get', '/v1/memories/{id}'],
  PromoteMemory: ['post', '/v1/memories/{id}/promote'],
  AdjudicateMemory: ['post', '/v1/memories/{id}/adjudicate'],
});

@ApiTags('memories')
@ApiAuthenticated()
@Controller('v1/memories')
@UseGuards(AuthGuard)
export class MemoriesController {
  constructor(
    @Inject(MEMORIES) private readonly memories: Memories,
    @Inject(ADJUDICATION) private readonly adjudication: Adjudicator,
  ) {}

  @Post()
  @ApiJsonBody(WriteMemoryRequest)
  @ApiOk(201, 'The recorded memory with its provenance.', WriteResultSchema(Memory), written)
  @ApiProblems(403, 409, 410)
  async write(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Body(new ZodBody(WriteMemoryRequest)) body: WriteMemoryRequest,
  ) {
    const result = await this.memories.write(caller, body, requestId);
    return { ...result, memory: withoutAncestry(result.memory) };
  }

  @Get()
  @ApiQueryOf(MemoryListQuery)
  @ApiOk(
    200,
    "A page of the memories the caller may read (as GET /v1/memories/{id} would return each), first recorded first; working memories only the caller's own or those of `session`.",
    PageSchema(Memory),
  )
  @ApiProblems(400, 403, 410)
  async list(@Caller() caller: Principal, @RequestId() requestId: string, @Query() query: unknown) {
    const page = await this.memories.list(caller, query, requestId);
    return { items: page.items.map(withoutAncestry), nextCursor: page.nextCursor };
  }

  @Get(':id/versions')
  @ApiId('The memory.')
  @ApiQueryOf(MemoryVersionsQuery)
  @ApiOk(200, 'Every version of the memory the caller may read, oldest first (404 when the caller may not read the memory).', {
    type: 'object',
    required: ['items'],
    properties: { items: { type: 'array', items: Memory } },
  })
  @ApiProblems(400, 403, 404, 410)
  async versions(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Query() query: unknown) {
    const { items } = await this.memories.versions(caller, id, query, requestId);
    return { items: items.map(withoutAncestry) };
  }

  @Post(':id/adjudicate')
  @HttpCode(200)
  @ApiId('The disputed fact.')
  @ApiJsonBody(AdjudicateRequest)
  @ApiOk(200, 'Settles a contradicted fact (roles admin, dpo, reviewer); returns the new versions.', {
    type: 'object',
    required: ['memory', 'revised'],
    properties: { memory: Memory, revised: { type: 'array', items: Memory } },
  })
  @ApiProblems(403, 404, 409, 410)
  async adjudicate(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Body() body: unknown) {
    const result = await this.adjudication.adjudicate(caller, id, body, requestId);
    return { memory: withoutAncestry(result.memory), revised: result.revised.map(withoutAncestry) };
  }

  @Post(':id/promote')
  @ApiId('The working memory.')
  @ApiJsonBody(PromoteMemoryRequest, { required: false })
  @ApiOk(
    201,
    'Keeps a working memory beyond its session (named in `session`): a new record of `kind` (default semantic) citing it as parent.',
    WriteResultSchema(Memory),
    written,
  )
  @ApiProblems(403, 404, 409, 410)
  async promote(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Param('id') id: string,
    @Body(new ZodBody(PromoteMemoryRequest, {})) body: PromoteMemoryRequest,
  ) {
    const result = await this.memories.promote(caller, id, body, requestId);
    return { ...result, memory: withoutAncestry(result.memory) };
  }

  @Get(':id')
  @ApiId('The memory.')
  @ApiQuery({
    name: 'purpose',
    required: false,
    description: 'The purpose of this read, when the caller has several.',
    schema: { type: 'string' },
  })
  @ApiQuery({
    name: 'session',
    required: false,
    description: 'The session of a working memory (its owner may omit it).',
    schema: { type: 'string' },
  })
  @ApiOk(200, 'The record with provenance and status; a working memory only with its `session` (or to its owner).', Memory)
  @ApiProblems(403, 404, 410, 422)
  async get(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Param('id') id: string,
    @Query('purpose') purpose?: string,
    @Query('session') session?: string,
  ) {
    return withoutAncestry(await this.memories.get(caller, id, { purpose, requestId, session }));
  }
}
