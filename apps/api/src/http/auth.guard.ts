import { Inject, Injectable, createParamDecorator, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import type { Principal } from '@elma/domain';
import { Unauthenticated, verifyToken, type Elma } from '@elma/infra';
import { ELMA } from './tokens';

type WithPrincipal = { headers: Record<string, string | string[] | undefined>; principal?: Principal };

function requestOf(context: ExecutionContext): WithPrincipal {
  if (context.getType<string>() === 'graphql') {
    return GqlExecutionContext.create(context).getContext<{ request: WithPrincipal }>().request;
  }
  return context.switchToHttp().getRequest<WithPrincipal>();
}

/** Verifies the bearer JWT and attaches the principal; the tenant is taken from the token only. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(@Inject(ELMA) private readonly elma: Elma) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = requestOf(context);
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
    if (!match) throw new Unauthenticated('send Authorization: Bearer <token> (mint one with `npm run elma -- token`)');
    request.principal = await verifyToken(this.elma.config.jwtSecret, match[1]);
    return true;
  }
}

/** The authenticated caller of this request. */
export const Caller = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  const principal = requestOf(context).principal;
  if (!principal) throw new Unauthenticated('not authenticated');
  return principal;
});
