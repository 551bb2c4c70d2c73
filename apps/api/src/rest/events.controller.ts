import { Body, Controller, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { IngestRequest, type Principal } from '@elma/domain';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { INGEST, type Ingest } from '../http/tokens';
import { ZodBody } from '../http/zod-body';
import { ApiAuthenticated, ApiJsonBody, ApiOk, ApiProblems, IngestResultSchema } from './openapi';

@ApiTags('events')
@ApiAuthenticated()
@Controller('v1/events')
@UseGuards(AuthGuard)
export class EventsController {
  constructor(@Inject(INGEST) private readonly ingestion: Ingest) {}

  @Post()
  @HttpCode(202)
  @ApiJsonBody(IngestRequest, {
    description: 'One event, or `{ events: [...] }` with up to 1,000 (all or nothing).',
    example: {
      subject: 'cust-42',
      occurredAt: '2026-11-20T10:00:00Z',
      activity: 'chat.turn',
      content: { text: 'I moved to Lyon last month; please send invoices there.' },
      source: { system: 'crm', channel: 'chat' },
      purposes: ['support'],
    },
  })
  @ApiOk(202, 'Appended (or already present: `duplicate: true`). `position` serves read-your-writes.', IngestResultSchema)
  @ApiProblems(403, 409, 410)
  ingest(@Caller() caller: Principal, @RequestId() requestId: string, @Body(new ZodBody(IngestRequest)) body: IngestRequest) {
    return this.ingestion.ingest(caller, body, requestId);
  }
}
