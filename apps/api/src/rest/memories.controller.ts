import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiResponse, ApiTags } from '@nestjs/swagger';
import { PromoteMemoryRequest, WriteMemoryRequest, withoutAncestry, type Principal } from '@elma/domain';
import type { Elma } from '@elma/infra';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ELMA } from '../http/tokens';
import { jsonSchema, problemResponse } from './openapi';

@ApiTags('memories')
@ApiBearerAuth()
@Controller('v1/memories')
@UseGuards(AuthGuard)
export class MemoriesController {
  constructor(@Inject(ELMA) private readonly elma: Elma) {}

  @Post()
  @ApiBody({ schema: jsonSchema(WriteMemoryRequest) })
  @ApiResponse({ status: 201, description: 'The recorded memory with its provenance.' })
  @ApiResponse({ status: 409, ...problemResponse })
  @ApiResponse({ status: 422, ...problemResponse })
  async write(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    const result = await this.elma.memories.write(caller, body, requestId);
    return { ...result, memory: withoutAncestry(result.memory) };
  }

  @Post(':id/adjudicate')
  @HttpCode(200)
  @ApiResponse({ status: 200, description: 'Settles a contradicted fact (roles admin, dpo, reviewer): `{ "decision": "accept" | "reject" }`; returns the new versions.' })
  @ApiResponse({ status: 403, ...problemResponse })
  async adjudicate(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Body() body: unknown) {
    const result = await this.elma.adjudication.adjudicate(caller, id, body, requestId);
    return { memory: withoutAncestry(result.memory), revised: result.revised.map(withoutAncestry) };
  }

  @Post(':id/promote')
  @ApiBody({ schema: jsonSchema(PromoteMemoryRequest) })
  @ApiResponse({ status: 201, description: 'Keeps a working memory beyond its session (named in `session`): a new record of `kind` (default semantic) citing it as parent.' })
  @ApiResponse({ status: 404, ...problemResponse })
  @ApiResponse({ status: 422, ...problemResponse })
  async promote(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Body() body: unknown) {
    const result = await this.elma.memories.promote(caller, id, body ?? {}, requestId);
    return { ...result, memory: withoutAncestry(result.memory) };
  }

  @Get(':id')
  @ApiResponse({ status: 200, description: "The record with provenance and status; a working memory only with its `session` (or to its owner)." })
  @ApiResponse({ status: 404, ...problemResponse })
  async get(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Param('id') id: string,
    @Query('purpose') purpose?: string,
    @Query('session') session?: string,
  ) {
    return withoutAncestry(await this.elma.memories.get(caller, id, { purpose, requestId, session }));
  }
}
