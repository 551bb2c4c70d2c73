import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { AuditOperation, PlaceLegalHold, PolicyDocument, parseOrThrow, type Principal } from '@elma/domain';
import type { Elma } from '@elma/infra';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ELMA } from '../http/tokens';
import { jsonSchema, problemResponse } from './openapi';

const AuditQuery = z.strictObject({
  from: z.iso.datetime({ offset: true }).optional(),
  to: z.iso.datetime({ offset: true }).optional(),
  actor: z.string().optional(),
  subject: z.string().optional(),
  resource: z.string().optional(),
  operation: AuditOperation.optional(),
});

/** `?expectedVersion=n` on a policy PUT: a version number, or the PUT is refused with the parameter's path. */
const PolicyPutQuery = z.object({ expectedVersion: z.string().regex(/^\d{1,15}$/, 'a policy version (a whole number)').transform(Number).optional() });

@ApiTags('governance')
@ApiBearerAuth()
@Controller('v1')
@UseGuards(AuthGuard)
export class GovernanceController {
  constructor(@Inject(ELMA) private readonly elma: Elma) {}

  @Get('policy')
  @ApiResponse({ status: 200, description: "The tenant's current policy (role admin)." })
  getPolicy(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.elma.governance.getPolicy(caller, requestId);
  }

  @Put('policy')
  @ApiBody({ schema: jsonSchema(PolicyDocument) })
  @ApiResponse({ status: 200, description: 'The new policy version (role admin). `?expectedVersion=n` guards against lost updates.' })
  @ApiResponse({ status: 403, ...problemResponse })
  @ApiResponse({ status: 422, ...problemResponse })
  putPolicy(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown, @Query('expectedVersion') expected?: string) {
    const { expectedVersion } = parseOrThrow(PolicyPutQuery, { expectedVersion: expected });
    return this.elma.governance.putPolicy(caller, body, requestId, expectedVersion);
  }

  @Post('legal-holds')
  @ApiBody({ schema: jsonSchema(PlaceLegalHold) })
  @ApiResponse({ status: 201, description: 'The hold (role legal).' })
  placeHold(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.elma.governance.placeHold(caller, body, requestId);
  }

  @Get('legal-holds')
  listHolds(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.elma.governance.listHolds(caller, requestId);
  }

  @Delete('legal-holds/:id')
  @HttpCode(204)
  async releaseHold(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    await this.elma.governance.releaseHold(caller, id, requestId);
  }

  /** NDJSON, one audit entry a line (role auditor). */
  @Get('audit')
  @ApiResponse({ status: 200, description: 'application/x-ndjson audit entries (role auditor).' })
  async exportAudit(@Caller() caller: Principal, @RequestId() requestId: string, @Query() query: unknown, @Res() reply: FastifyReply) {
    const q = parseOrThrow(AuditQuery, query);
    const entries = await this.elma.governance.exportAudit(
      caller,
      { from: q.from, to: q.to, actor: q.actor, subject: q.subject, resourceId: q.resource, operation: q.operation },
      requestId,
    );
    const lines: string[] = [];
    for await (const entry of entries) lines.push(JSON.stringify(entry));
    return reply.header('content-type', 'application/x-ndjson').send(lines.length ? `${lines.join('\n')}\n` : '');
  }

  @Post('audit/verify')
  @HttpCode(200)
  @ApiResponse({ status: 200, description: 'Re-computes the hash chain; names the first broken link.' })
  verifyAudit(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.elma.governance.verifyAudit(caller, requestId);
  }
}
