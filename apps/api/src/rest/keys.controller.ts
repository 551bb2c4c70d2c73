import { Body, Controller, Get, HttpCode, Inject, Post, UseGuards } from '@nestjs/common';

import { ApiTags, type ApiBodyOptions } from '@nestjs/swagger';
import { KeyRotationRequest, TokenRevocationRequest } from '@elma/application';
import type { Principal } from '@elma/domain';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { KEYS, type Keys } from '../http/tokens';
import { ApiAuthenticated, ApiJsonBody, ApiOk, ApiProblems } from './openapi';

type SchemaObject = NonNullable<Extract<ApiBodyOptions, { schema?: unknown }>['schema']>;

const RevocationSchema: SchemaObject = {
  type: 'object',
  required: ['jti', 'expiresAt'],
  properties: {
    jti: { type: 'string' },
    expiresAt: {
      type: 'string',
      format: 'date-time',
      description:
        'The deny-list entry is dropped after this: never before the token stops being accepted (its exp plus the allowed clock skew).',
    },
  },
};

const RotationSchema: SchemaObject = {
  type: 'object',
  required: ['tenant', 'retiring', 'remaining', 'state'],
  properties: {
    tenant: { type: 'string' },
    current: { type: 'integer', description: 'The tenant key version new data keys are wrapped under.' },
    retiring: { type: 'array', items: { type: 'integer' }, description: 'Older versions still wrapping rows.' },
    remaining: { type: 'integer', description: 'Rows still to re-wrap.' },
    state: { type: 'string', enum: ['running', 'done'] },
    rotation: { type: 'object', additionalProperties: true },
  },
};

/**
 * Token revocation and tenant key rotation. Both act on the caller's tenant
 * only (the tenant comes from the token): a revocation names a token id of
 * that tenant, and denies nothing of any other tenant.
 */
@ApiTags('keys')
@ApiAuthenticated()
@Controller('v1')
@UseGuards(AuthGuard)
export class KeysController {
  constructor(@Inject(KEYS) private readonly keys: Keys) {}

  @Post('tokens/revocations')
  @HttpCode(201)
  @ApiJsonBody(TokenRevocationRequest, {
    description:
      'Either `token` (the token itself: its jti, exp and tenant are read from it, the signature is not checked) or `jti` with, ' +
      'when known, `exp` (the token’s exp claim, seconds since 1970; without it the entry lasts ELMA_TOKEN_MAX_TTL plus the clock skew; one already past, beyond the skew, is refused with 422). ' +
      '`expiresAt` may keep the entry longer, never shorter than the token can be accepted.',
    example: { jti: '0b9f6d1e-3c2a-4f1e-9d7b-2a6c5e8f1a30', exp: 1767225600 },
  })
  @ApiOk(
    201,
    "Revokes a token of the caller's tenant (role admin) until it can no longer be accepted; later requests with it get 401 AUTH.TOKEN_REVOKED. A token of another tenant is refused (403 AUTH.TENANT_MISMATCH).",
    RevocationSchema,
  )
  @ApiProblems(403, 422)
  revoke(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.keys.revokeToken(caller, body, requestId);
  }

  @Post('keys/rotations')
  @HttpCode(202)
  @ApiJsonBody(KeyRotationRequest)
  @ApiOk(
    202,
    "Starts (or resumes) the rotation of the caller's tenant key (role admin); data keys are re-wrapped in the background.",
    RotationSchema,
  )
  @ApiProblems(403, 422)
  rotate(@Caller() caller: Principal, @RequestId() requestId: string, @Body() body: unknown) {
    return this.keys.rotateTenantKey(caller, body, requestId);
  }

  @Get('keys/rotations/current')
  @ApiOk(200, "Where the rotation of the caller's tenant key stands (role admin).", RotationSchema)
  @ApiProblems(403)
  status(@Caller() caller: Principal, @RequestId() requestId: string) {
    return this.keys.rotationStatus(caller, requestId);
  }
}
