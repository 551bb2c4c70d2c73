import { Body, Controller, Get, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import {
  CreateSubjectAccessRequest,
  SignedSubjectAccessManifest,
  SubjectAccessProgress,
  SubjectExport,
  type Principal,
} from '@elma/domain';
import { SubjectAccessDesk } from '../subject-access/subject-access-desk';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { SUBJECT_ACCESS_DESK } from '../http/tokens';
import { ApiAuthenticated, ApiId, ApiJsonBody, ApiOk, ApiProblems, jsonSchema, linksFrom } from './openapi';

const requested = linksFrom('$response.body#/requestId', {
  SubjectAccessProgress: ['get', '/v1/subject-access/{id}'],
  SubjectAccessExportJson: ['get', '/v1/subject-access/{id}/export.json'],
  SubjectAccessExportPdf: ['get', '/v1/subject-access/{id}/export.pdf'],
  SubjectAccessManifest: ['get', '/v1/subject-access/{id}/manifest'],
});

@ApiTags('subject-access')
@ApiAuthenticated()
@Controller('v1/subject-access')
@UseGuards(AuthGuard)
export class SubjectAccessController {
  constructor(@Inject(SUBJECT_ACCESS_DESK) private readonly desk: SubjectAccessDesk) {}

  @Post()
  @HttpCode(202)
  @ApiJsonBody(CreateSubjectAccessRequest, {
    required: false,
    description: 'The data subject (roles dpo, compliance); a subject asking for themself may omit it where the tenant policy allows.',
    example: { subject: 'cust-7' },
  })
  @ApiOk(
    202,
    'Accepted: the subject-access workflow produces the export; follow it at GET /v1/subject-access/{id}.',
    jsonSchema(SubjectAccessProgress, 'output'),
    requested,
  )
  @ApiProblems(403)
  create(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.desk.create(caller, body, requestId);
  }

  @Get(':id')
  @ApiId('The subject-access request.')
  @ApiOk(200, 'Status, times and counts of the request (ids and counts only).', jsonSchema(SubjectAccessProgress, 'output'))
  @ApiProblems(404)
  progress(@Caller() caller: Principal, @Param('id') id: string) {
    return this.desk.progress(caller, id);
  }

  @Get(':id/export.json')
  @ApiId('The subject-access request.')
  @ApiOk(
    200,
    'The export: every record of the subject with provenance, lineage, purposes, retention, marks, and the processing history.',
    jsonSchema(SubjectExport, 'output'),
  )
  @ApiProblems(404, 409, 410)
  async exportJson(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Res() reply: FastifyReply) {
    const json = await this.desk.file(caller, id, 'export.json', requestId);
    return reply
      .header('content-type', 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="subject-access-${id}.json"`)
      .send(json);
  }

  @Get(':id/export.pdf')
  @ApiId('The subject-access request.')
  @ApiResponse({
    status: 200,
    description: 'The export as a readable PDF.',
    content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
  })
  @ApiProblems(404, 409, 410)
  async exportPdf(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Res() reply: FastifyReply) {
    const pdf = await this.desk.file(caller, id, 'export.pdf', requestId);
    return reply
      .header('content-type', 'application/pdf')
      .header('content-disposition', `attachment; filename="subject-access-${id}.pdf"`)
      .send(pdf);
  }

  @Get(':id/manifest')
  @ApiId('The subject-access request.')
  @ApiOk(
    200,
    'The signed manifest (sha256 of export.json and export.pdf); verify with `elma verify-certificate` and /.well-known/elma-keys.',
    jsonSchema(SignedSubjectAccessManifest, 'output'),
  )
  @ApiProblems(404, 409)
  manifest(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    return this.desk.manifest(caller, id, requestId);
  }
}
