import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Res, UseGuards } from '@nestjs/common';
import { ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { AuditOperation, PlaceLegalHold, PolicyDocument, TenantPolicy, parseOrThrow, type Principal } from '@elma/domain';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { GOVERNANCE, type Governance } from '../http/tokens';
import { ApiAuthenticated, ApiId, ApiJsonBody, ApiOk, ApiProblems, ApiQueryOf, jsonSchema, LegalHoldSchema, linksFrom } from './openapi';

const AuditQuery = z.strictObject({
  from: z.iso.datetime({ offset: true }).optional(),
  to: z.iso.datetime({ offset: true }).optional(),
  actor: z.string().optional(),
  subject: z.string().optional(),
  resource: z.string().optional(),
  operation: AuditOperation.optional(),
});

/** `?expectedVersion=n` on a policy PUT: a version number, or the PUT is refused with the parameter's path. */
const PolicyPutQuery = z.object({
  expectedVersion: z
    .string()
    .regex(/^\d{1,15}$/, 'a policy version (a whole number)')
    .transform(Number)
    .optional(),
});
const Policy = jsonSchema(TenantPolicy, 'output');
const Hold = LegalHoldSchema(jsonSchema(PlaceLegalHold, 'output'));

@ApiTags('governance')
@ApiAuthenticated()
@Controller('v1')
@UseGuards(AuthGuard)
export class GovernanceController {
  constructor(@Inject(GOVERNANCE) private readonly governance: Governance) {}

  @Get('policy')
  @ApiOk(200, "The tenant's current policy (role admin).", Policy)
  @ApiProblems(403)
  getPolicy(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.governance.getPolicy(caller, requestId);
  }

  @Put('policy')
  @ApiJsonBody(PolicyDocument)
  @ApiQuery({
    name: 'expectedVersion',
    required: false,
    description: 'The version this update replaces; guards against lost updates.',
    schema: { type: 'integer', minimum: 1 },
  })
  @ApiOk(200, 'The new policy version (role admin).', Policy)
  @ApiProblems(403, 409)
  putPolicy(
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Body() body: unknown,
    @Query('expectedVersion') expected?: string,
  ) {
    const { expectedVersion } = parseOrThrow(PolicyPutQuery, { expectedVersion: expected });
    return this.governance.putPolicy(caller, body, requestId, expectedVersion);
  }

  @Post('legal-holds')
  @ApiJsonBody(PlaceLegalHold, { example: { scope: { subjects: ['cust-42'] }, reason: 'matter 2026-117' } })
  @ApiOk(201, 'The hold (role legal).', Hold, linksFrom('$response.body#/id', { ReleaseHold: ['delete', '/v1/legal-holds/{id}'] }))
  @ApiProblems(403)
  placeHold(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.governance.placeHold(caller, body, requestId);
  }

  @Get('legal-holds')
  @ApiOk(200, 'The active holds (role legal).', { type: 'array', items: Hold })
  @ApiProblems(403)
  listHolds(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.governance.listHolds(caller, requestId);
  }

  @Delete('legal-holds/:id')
  @HttpCode(204)
  @ApiId('The hold.')
  @ApiResponse({ status: 204, description: 'Released (role legal).' })
  @ApiProblems(403, 404)
  async releaseHold(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    await this.governance.releaseHold(caller, id, requestId);
  }

  /** NDJSON, one audit entry a line (role auditor). */
  @Get('audit')
  @ApiQueryOf(AuditQuery)
  @ApiResponse({
    status: 200,
    description: 'Audit entries, one JSON object a line (role auditor).',
    content: { 'application/x-ndjson': { schema: { type: 'string' } } },
  })
  @ApiProblems(403, 422)
  async exportAudit(@Caller() caller: Principal, @RequestId() requestId: string, @Query() query: unknown, @Res() reply: FastifyReply) {
    const q = parseOrThrow(AuditQuery, query);
    const entries = await this.governance.exportAudit(
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
  @ApiOk(200, 'Re-computes the hash chain; names the first broken link (role auditor).', {
    type: 'object',
    required: ['ok', 'checked'],
    properties: {
      ok: { type: 'boolean' },
      checked: { type: 'integer' },
      firstBroken: { type: 'object', properties: { seq: { type: 'integer' }, reason: { type: 'string' } } },
    },
  })
  @ApiProblems(403)
  verifyAudit(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.governance.verifyAudit(caller, requestId);
  }
}
