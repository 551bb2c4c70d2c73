import { Controller, Get, UseGuards } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '@elma/domain';
import { AuthGuard, Caller } from '../http/auth.guard';
import { ApiAuthenticated, ApiOk, jsonSchema } from './openapi';

/** The caller as the server verified the bearer token: what a client (the console) shows after sign-in. */
@ApiTags('auth')
@ApiAuthenticated()
@Controller('v1/session')
@UseGuards(AuthGuard)
export class SessionController {
  @Get()
  @ApiOk(
    200,
    "The verified token's tenant, subject, roles, purposes and clearance (the caller's own; nothing else).",
    jsonSchema(Principal, 'output'),
  )
  session(@Caller() caller: Principal): Principal {
    return caller;
  }
}
