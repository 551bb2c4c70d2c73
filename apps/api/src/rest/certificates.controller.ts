import { Body, Controller, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiTags } from '@nestjs/swagger';
import { CertificateCheckResult } from '@elma/domain';
import { CertificateDesk } from '../certificate/certificate-desk';
import { AuthGuard } from '../http/auth.guard';
import { CERTIFICATE_DESK } from '../http/tokens';
import { ApiAuthenticated, ApiOk, ApiProblems, jsonSchema } from './openapi';

/** The media types a certificate file is uploaded as: the file's bytes as they are (see `certificateUploads`). */
export const CERTIFICATE_UPLOAD_TYPES = ['application/octet-stream', 'application/pdf', 'application/json'] as const;

@ApiTags('erasure')
@ApiAuthenticated()
@Controller('v1/certificates')
@UseGuards(AuthGuard)
export class CertificatesController {
  constructor(@Inject(CERTIFICATE_DESK) private readonly desk: CertificateDesk) {}

  @Post('verify')
  @HttpCode(200)
  @ApiConsumes(...CERTIFICATE_UPLOAD_TYPES)
  @ApiBody({
    description:
      'The certificate file as it was downloaded: the signed JSON (erasure certificate, subject-access manifest, off-boarding ' +
      'certificate), or the erasure certificate PDF (its attached signed JSON is checked, and its pages must show that certificate).',
    schema: { type: 'string', format: 'binary' },
    required: true,
  })
  @ApiOk(
    200,
    "Checked against this ELMA's signing keys (/.well-known/elma-keys): `valid`, and why not (`reason`), or what it certifies.",
    jsonSchema(CertificateCheckResult, 'output'),
  )
  @ApiProblems(400, 413, 415, 422)
  verify(@Body() body: unknown) {
    return this.desk.verify(body);
  }
}
