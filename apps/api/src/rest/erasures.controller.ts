import { Body, Controller, Get, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CreateErasureRequest, type Principal } from '@elma/domain';
import { ErasureDesk } from '../erasure/erasure-desk';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { ERASURE_DESK } from '../http/tokens';
import { jsonSchema, problemResponse } from './openapi';

@ApiTags('erasure')
@ApiBearerAuth()
@Controller('v1/erasures')
@UseGuards(AuthGuard)
export class ErasuresController {
  constructor(@Inject(ERASURE_DESK) private readonly desk: ErasureDesk) {}

  @Post()
  @HttpCode(202)
  @ApiBody({ schema: jsonSchema(CreateErasureRequest) })
  @ApiResponse({ status: 202, description: 'Accepted: the erasure workflow runs; follow it at GET /v1/erasures/{id} (roles compliance or dpo, or a data subject for their own records).' })
  @ApiResponse({ status: 403, ...problemResponse })
  @ApiResponse({ status: 422, ...problemResponse })
  create(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.desk.create(caller, body, requestId);
  }

  @Get(':id')
  @ApiResponse({ status: 200, description: 'Live progress: status, current step, finished steps with time and attempts, closure size.' })
  @ApiResponse({ status: 404, ...problemResponse })
  progress(@Caller() caller: Principal, @Param('id') id: string) {
    return this.desk.progress(caller, id);
  }

  @Post(':id/approve')
  @HttpCode(200)
  @ApiResponse({ status: 200, description: 'Approves a closure above the tenant threshold (role dpo, not the requester).' })
  @ApiResponse({ status: 409, ...problemResponse })
  approve(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    return this.desk.approve(caller, id, requestId);
  }

  @Get(':id/certificate')
  @ApiResponse({ status: 200, description: 'The signed certificate (JSON); verify with `elma verify-certificate` and /.well-known/elma-keys.' })
  @ApiResponse({ status: 409, ...problemResponse })
  certificate(@Caller() caller: Principal, @RequestId() requestId: string, @Param('id') id: string) {
    return this.desk.certificate(caller, id, requestId);
  }

  @Get(':id/certificate.pdf')
  @ApiResponse({ status: 200, description: 'The certificate as a readable PDF for a compliance officer.' })
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
  @ApiResponse({ status: 200, description: 'JWKS of the Ed25519 keys that sign erasure certificates.' })
  keys() {
    return this.desk.keys();
  }
}
