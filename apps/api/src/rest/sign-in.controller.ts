import { Body, Controller, Get, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal, SignInGrant } from '@elma/domain';

import { ZodBody } from '../http/zod-body';
import { SIGN_IN_DESK } from '../http/tokens';
import type { SignInDesk } from '../sign-in/sign-in-desk';
import { ApiJsonBody, ApiOk, ApiProblems, jsonSchema } from './openapi';

const IdentityProviderSchema = {
  type: 'object',
  nullable: true,
  description: '`null` when only token sign-in is configured.',
  required: ['issuer', 'authorizationEndpoint', 'clientId', 'scope'],
  properties: {
    name: { type: 'string', description: 'The label for the sign-in button (ELMA_OIDC_PROVIDER_NAME).' },
    issuer: { type: 'string' },
    authorizationEndpoint: { type: 'string', format: 'uri', description: "From the provider's discovery document." },
    clientId: { type: 'string' },
    scope: { type: 'string' },
    resource: { type: 'string', description: 'RFC 8707 resource indicator to send with the authorization request.' },
  },
};

const SignInOptionsSchema = {
  type: 'object',
  required: ['identityProvider'],
  properties: { identityProvider: IdentityProviderSchema },
};

const SignedInSchema = {
  type: 'object',
  required: ['accessToken', 'tokenType', 'principal'],
  properties: {
    accessToken: { type: 'string', description: "The provider's access token: send it as `Authorization: Bearer`." },
    tokenType: { type: 'string', enum: ['Bearer'] },
    expiresIn: { type: 'integer', minimum: 1, description: 'Seconds it lives, as the provider said.' },
    principal: jsonSchema(Principal, 'output'),
  },
};

/**
 * Sign-in through the organisation's identity provider (OpenID Connect, authorization code with PKCE), for the
 * console and any other browser client. Before sign-in, so without a bearer token.
 */
@ApiTags('auth')
// Before sign-in, so no bearer scheme and no 401 for a missing token; admission and the HTTP layer's limits apply.
@ApiProblems(414, 429, 431, 503)
@Controller('v1/sign-in')
export class SignInController {
  constructor(@Inject(SIGN_IN_DESK) private readonly desk: SignInDesk) {}

  @Get()
  @ApiOk(200, 'The identity provider to send a browser to, or `null` when only token sign-in is configured.', SignInOptionsSchema)
  options() {
    return this.desk.options();
  }

  @Post('token')
  @HttpCode(200)
  @ApiJsonBody(SignInGrant, {
    description: "The code the provider redirected back with, the PKCE verifier, and the redirect URI (the console's `/console/`).",
  })
  @ApiOk(200, "The provider's access token, checked as every request checks it, and the caller it names.", SignedInSchema)
  @ApiProblems(401, 404, 410)
  signIn(@Body(new ZodBody(SignInGrant)) grant: SignInGrant) {
    return this.desk.signIn(grant);
  }
}
