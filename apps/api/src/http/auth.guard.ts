import { Inject, Injectable, createParamDecorator, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import { TenantMismatch, TenantOffboarded, type Principal } from '@elma/domain';
import { Unauthenticated } from '@elma/infra';
import { TENANT_CLOSURES, TOKEN_VERIFIER, type BearerVerifier, type ClosedTenants } from './tokens';

type WithPrincipal = {
  headers: Record<string, string | string[] | undefined>;
  principal?: Principal;
  body?: unknown;
  query?: unknown;
  id?: string | number;
};

function requestOf(context: ExecutionContext): WithPrincipal {
  if (context.getType<string>() === 'graphql') {
    return GqlExecutionContext.create(context).getContext<{ request: WithPrincipal }>().request;
  }
  return context.switchToHttp().getRequest<WithPrincipal>();
}

/**
 * Verifies the bearer JWT and attaches the principal; the tenant is taken from the token only. A token of an
 * off-boarded tenant is refused (410 TENANT.OFFBOARDED).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(TOKEN_VERIFIER) private readonly verifier: BearerVerifier,
    @Inject(TENANT_CLOSURES) private readonly closures: ClosedTenants,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = requestOf(context);
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
    if (!match) throw new Unauthenticated('send Authorization: Bearer <token> (mint one with `npx elma token`)');
    const principal = await this.verifier.verify(match[1]);
    // An off-boarded tenant (or one being off-boarded) is gone: its tokens read nothing and write nothing, and
    // its name cannot be used to start a new tenant over the old data.
    if ((await this.closures.closure(principal.tenant)) !== undefined) throw new TenantOffboarded();
    bindTenant(principal.tenant, request.body);
    bindTenant(principal.tenant, request.query);
    request.principal = principal;
    return true;
  }
}

/**
 * The tenant comes from the token only. A body or query that names a tenant
 * (at the top level or in a batch's events) must name the token's tenant, or
 * the request is refused; when it does, the field is dropped before the
 * schemas (which have no tenant field) see the request.
 */
function bindTenant(tenant: string, container: unknown): void {
  if (!container || typeof container !== 'object') return;
  const targets = [container as Record<string, unknown>];
  const events = (container as { events?: unknown }).events;
  if (Array.isArray(events)) targets.push(...events.filter((e): e is Record<string, unknown> => !!e && typeof e === 'object'));
  for (const target of targets) {
    if (!('tenant' in target)) continue;
    if (target.tenant !== tenant) throw new TenantMismatch();
    delete target.tenant;
  }
}

/** The id Fastify gave this request, for audit entries and problem details. */
export const RequestId = createParamDecorator((_: unknown, context: ExecutionContext): string =>
  String(requestOf(context).id ?? 'graphql'),
);

/** The authenticated caller of this request. */
export const Caller = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  const principal = requestOf(context).principal;
  if (!principal) throw new Unauthenticated('not authenticated');
  return principal;
});
