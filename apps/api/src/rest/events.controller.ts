import { Body, Controller, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiResponse, ApiTags } from '@nestjs/swagger';
import { IngestRequest, type Principal } from '@elma/domain';
import type { Elma } from '@elma/infra';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ELMA } from '../http/tokens';
import { jsonSchema, problemResponse } from './openapi';

@ApiTags('events')
@ApiBearerAuth()
@Controller('v1/events')
@UseGuards(AuthGuard)
export class EventsController {
  constructor(@Inject(ELMA) private readonly elma: Elma) {}

  @Post()
  @HttpCode(202)
  @ApiBody({ schema: jsonSchema(IngestRequest), description: 'One event, or `{ events: [...] }` with up to 1,000 (all or nothing).' })
  @ApiResponse({ status: 202, description: 'Appended (or already present: `duplicate: true`). `position` serves read-your-writes.' })
  @ApiResponse({ status: 400, ...problemResponse })
  @ApiResponse({ status: 422, ...problemResponse })
  ingest(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.elma.ingest.ingest(caller, body, requestId);
  }
}
