import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CreateErasureRequest, ErasureListQuery, SignedCertificate, type Principal } from '@elma/domain';
import { ErasureDesk } from '../erasure/erasure-desk';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ERASURE_DESK } from '../http/tokens';
import {
  ApiAuthenticated,
  ApiId,
  ApiJsonBody,
  ApiOk,
  ApiProblems,
  ApiQueryOf,
  ErasureProgressSchema,
  jsonSchema,
  linksFrom,
  PageSchema,
} from './openapi';

const requested = linksFrom('$response.body#/requestId', {
  ErasureProgress: ['get', '/v1/erasures/{id}'],
  ApproveErasure: ['post', '/v1/erasures/{id}/approve'],
  ErasureCertificate: ['get', '/v1/erasures/{id}/certificate'],
  ErasureCertificatePdf: ['get', '/v1/erasures/{id}/certificate.pdf'],
});

@ApiTags('erasure')
@ApiAuthenticated()
@Controller('v1/erasures')
@UseGuards(AuthGuard)
export class ErasuresController {
  constructor(@Inject(ERASURE_DESK) private readonly desk: ErasureDesk) {}

  @Post()
  @HttpCode(202)
  @ApiJsonBody(CreateErasureRequest)
  @ApiOk(
    202,
    'Accepted: the erasure workflow runs; follow it at GET /v1/erasures/{id} (roles compliance or dpo, or a data subject for their own records).',
    ErasureProgressSchema,
    requested,
  )
  @ApiProblems(403, 409)
  create(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.desk.create(caller, body, requestId);
  }

  @Get()
  @ApiQueryOf(ErasureListQuery)
  @ApiOk(
    200,
    "A page of the tenant's erasures, in the order they were requested, each with its live progress: all of them for the roles compliance, dpo and auditor, the caller's own requests otherwise.",
    PageSchema(ErasureProgressSchema),
  )
  @ApiProblems(400, 403)
  list(@Caller() caller: Principal, @Query() query: unknown) {
    return this.desk.list(caller, query);
  }

  @Get(':id')
  @ApiId('The erasure request.')
  @ApiOk(200, 'Live progress: status, current step, finished steps with time and attempts, closure size.', ErasureProgressSchema)
  @ApiProblems(403, 404)
  progress(@Caller() caller: Principal, @Param('id') id: string) {
    return this.desk.progress(caller, id);
  }

  @Post(':id/approve')
  @HttpCode(200)
  @ApiId('The erasure request.')
  @ApiOk(200, 'Approves a closure above the tenant threshold (role dpo, not the requester).', ErasureProgressSchema)
  @ApiProblems(403, 404, 409)
  approve(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    return this.desk.approve(caller, id, requestId);
  }

  @Get(':id/certificate')
  @ApiId('The erasure request.')
  @ApiOk(
    200,
    'The signed certificate (JSON); verify with `elma verify-certificate` and /.well-known/elma-keys.',
    jsonSchema(SignedCertificate, 'output'),
  )
  @ApiProblems(403, 404, 409)
  certificate(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    return this.desk.certificate(caller, id, requestId);
  }

  @Get(':id/certificate.pdf')
  @ApiId('The erasure request.')
  @ApiResponse({
    status: 200,
    description: 'The certificate as a readable PDF for a compliance officer.',
    content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
  })
  @ApiProblems(403, 404, 409)
  async certificatePdf(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string, @Res() reply: FastifyReply) {
    const pdf = await this.desk.certificatePdf(caller, id, requestId);
    return reply
      .header('content-type', 'application/pdf')
      .header('content-disposition', `attachment; filename="erasure-${id}.pdf"`)
      .send(pdf);
  }
}

/** Public keys of the certificate signer (JWKS); no authentication, like any JWKS. */
@ApiTags('erasure')
@Controller('.well-known')
export class WellKnownController {
  constructor(@Inject(ERASURE_DESK) private readonly desk: ErasureDesk) {}

  @Get('elma-keys')
  @ApiOk(200, 'JWKS of the Ed25519 keys that sign erasure certificates.', {
    type: 'object',
    required: ['keys'],
    properties: {
      keys: {
        type: 'array',
        items: {
          type: 'object',
          required: ['kty', 'crv', 'x', 'kid'],
          properties: {
            kty: { type: 'string' },
            crv: { type: 'string' },
            x: { type: 'string' },
            kid: { type: 'string' },
            use: { type: 'string' },
            alg: { type: 'string' },
          },
        },
      },
    },
  })
  @ApiProblems(414, 431)
  keys() {
    return this.desk.keys();
  }
}
