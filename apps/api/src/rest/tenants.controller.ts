import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import { CreateOffboardRequest, OffboardProgress, SignedOffboardingCertificate, type Principal } from '@elma/domain';
import { OffboardingDesk } from '../offboarding/offboarding-desk';
import { AuthGuard, Caller, RequestId } from '../http/auth.guard';
import { OFFBOARDING_DESK } from '../http/tokens';
import { ApiAuthenticated, ApiJsonBody, ApiOk, ApiProblems, jsonSchema } from './openapi';

const TenantParam = () => ApiParam({ name: 'id', required: true, description: 'The tenant.', schema: { type: 'string', minLength: 1 } });
const RequestParam = () =>
  ApiParam({ name: 'requestId', required: true, description: 'The off-boarding request.', schema: { type: 'string', minLength: 1 } });

/**
 * Tenant off-boarding, for platform admins (role platform-admin in a token of the platform tenant, four eyes).
 * Any other caller gets 403 whatever the tenant named, and a tenant that does not exist is answered like one
 * that does.
 */
@ApiTags('tenants')
@ApiAuthenticated()
@Controller('v1/tenants/:id/offboard')
@UseGuards(AuthGuard)
export class TenantsController {
  constructor(@Inject(OFFBOARDING_DESK) private readonly desk: OffboardingDesk) {}

  @Post()
  @HttpCode(202)
  @TenantParam()
  @ApiJsonBody(CreateOffboardRequest)
  @ApiOk(202, 'Stored, awaiting the approval of a second platform admin.', jsonSchema(OffboardProgress, 'output'))
  @ApiProblems(403, 409, 422)
  request(@Caller() caller: Principal, @RequestId() httpRequestId: string, @Param('id') tenant: string, @Body() body: unknown) {
    return this.desk.request(caller, tenant, body, httpRequestId);
  }

  @Post(':requestId/approve')
  @HttpCode(202)
  @TenantParam()
  @RequestParam()
  @ApiOk(202, 'Approved by a second platform admin: the off-boarding workflow runs.', jsonSchema(OffboardProgress, 'output'))
  @ApiProblems(403, 404, 409, 503)
  approve(
    @Caller() caller: Principal,
    @RequestId() httpRequestId: string,
    @Param('id') tenant: string,
    @Param('requestId') requestId: string,
  ) {
    return this.desk.approve(caller, tenant, requestId, httpRequestId);
  }

  @Get(':requestId')
  @TenantParam()
  @RequestParam()
  @ApiOk(200, 'Status and finished steps (counts only).', jsonSchema(OffboardProgress, 'output'))
  @ApiProblems(403, 404)
  progress(
    @Caller() caller: Principal,
    @RequestId() httpRequestId: string,
    @Param('id') tenant: string,
    @Param('requestId') requestId: string,
  ) {
    return this.desk.progress(caller, tenant, requestId, httpRequestId);
  }

  @Get(':requestId/certificate')
  @TenantParam()
  @RequestParam()
  @ApiOk(
    200,
    'The signed off-boarding certificate; verify with `elma verify-certificate` and /.well-known/elma-keys.',
    jsonSchema(SignedOffboardingCertificate, 'output'),
  )
  @ApiProblems(403, 404, 409)
  certificate(
    @Caller() caller: Principal,
    @RequestId() httpRequestId: string,
    @Param('id') tenant: string,
    @Param('requestId') requestId: string,
  ) {
    return this.desk.certificate(caller, tenant, requestId, httpRequestId);
  }
}
