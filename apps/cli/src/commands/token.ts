import { parseArgs } from 'node:util';
import { BUILT_IN_ROLES, TENANT_ID_RULE, TenantId, unknownRoles } from '@elma/domain';
import { mintToken } from '@elma/infra/auth';
import { loadConfig, parseDuration } from '@elma/infra/config';

const list = (value: string | undefined, fallback: string[]) =>
  value === undefined
    ? fallback
    : value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

/**
 * Mints a development token for the embedded default (signed with the secret
 * in the data folder, ELMA_DATA_DIR, which an ELMA must have started on: the command refuses a folder without
 * its jwt.secret and creates none). `--name` is the display name certificates show for the staff who request or approve an
 * erasure (the `name` claim). `--roles` takes built-in roles only; roles that a
 * tenant's policy defines go in `--policy-roles` (the API checks them against
 * that policy). The lifetime (`--ttl`, default 8 h or the maximum if less) is bounded by
 * ELMA_TOKEN_MAX_TTL, which the API enforces too.
 */
export async function tokenCommand(argv: string[]): Promise<number> {
  if (argv[0] === 'revoke') return (await import('./token-revoke')).tokenRevokeCommand(argv.slice(1));
  const { values } = parseArgs({
    args: argv,
    options: {
      tenant: { type: 'string', default: 'acme' },
      sub: { type: 'string', default: 'dev-agent' },
      name: { type: 'string' },
      roles: { type: 'string' },
      'policy-roles': { type: 'string' },
      purposes: { type: 'string' },
      clearance: { type: 'string', default: 'internal' },
      ttl: { type: 'string' },
    },
  });
  const config = loadConfig(process.env, { secrets: 'existing' });
  const fail = (message: string) => {
    process.stderr.write(`elma token: ${message}\n`);
    return 2;
  };
  if (config.auth.jwksUrl) return fail('ELMA_JWKS_URL is set: the API accepts only tokens from that identity provider');
  if (!TenantId.safeParse(values.tenant).success) return fail(`--tenant: ${TENANT_ID_RULE}`);
  const roles = list(values.roles, ['agent']);
  const unknown = unknownRoles(roles);
  if (unknown.length > 0) {
    return fail(
      `unknown role ${unknown.join(', ')}; built-in roles: ${BUILT_IN_ROLES.join(', ')} (roles a tenant policy defines go in --policy-roles)`,
    );
  }
  const ttlSeconds = values.ttl === undefined ? Math.min(8 * 3600, config.auth.maxTtlSeconds) : parseDuration(values.ttl);
  if (ttlSeconds === undefined || ttlSeconds < 1) return fail('--ttl is a duration such as 900, 15m, 8h or 1d');
  if (ttlSeconds > config.auth.maxTtlSeconds) return fail(`--ttl is at most ${config.auth.maxTtlSeconds} s (ELMA_TOKEN_MAX_TTL)`);
  const token = await mintToken(
    config.jwtSecret,
    {
      tenant: values.tenant!,
      sub: values.sub!,
      ...(values.name?.trim() ? { name: values.name.trim() } : {}),
      roles: [...roles, ...list(values['policy-roles'], [])],
      purposes: list(values.purposes, ['support']),
      clearance: values.clearance as 'internal',
    },
    { ttlSeconds, issuer: config.auth.issuer, audience: config.auth.audience },
  );
  process.stdout.write(`${token}\n`);
  return 0;
}
