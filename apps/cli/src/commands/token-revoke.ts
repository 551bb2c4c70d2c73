import { parseArgs } from 'node:util';
import { loadConfig } from '@elma/infra/config';
import { KeyAdministration } from '@elma/runtime';

const USAGE = 'usage: elma token revoke --tenant T (--token JWT | --jti ID [--exp SECONDS]) [--expires-at ISO-8601]\n';

interface Output {
  write(text: string): unknown;
}

/**
 * Puts a token of a tenant on the deny list (tokens.db in the data folder, read by every API process on its
 * next request) until it can no longer be accepted: `--token` reads its id and expiry from the token itself;
 * `--jti` with `--exp` (the token's `exp` claim) until then; `--jti` alone, the longest any token accepted now
 * can live. `--expires-at` may keep the entry longer, never shorter.
 */
export async function tokenRevokeCommand(argv: string[], io: { stdout: Output; stderr: Output } = process): Promise<number> {
  let values: { tenant?: string; token?: string; jti?: string; exp?: string; 'expires-at'?: string };
  try {
    values = parseArgs({
      args: argv,
      options: {
        tenant: { type: 'string' },
        token: { type: 'string' },
        jti: { type: 'string' },
        exp: { type: 'string' },
        'expires-at': { type: 'string' },
      },
    }).values;
    if (!values.tenant || !values.token === !values.jti) throw new Error('--tenant and one of --token, --jti are required');
    if (values.exp !== undefined && !/^\d{1,12}$/.test(values.exp)) throw new Error('--exp is the token’s exp claim, seconds since 1970');
  } catch (error) {
    io.stderr.write(`elma token revoke: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }
  const admin = await KeyAdministration.open(loadConfig(process.env, { secrets: 'existing' }));
  try {
    const result = await admin.revokeToken(values.tenant, {
      ...(values.token ? { token: values.token } : { jti: values.jti }),
      ...(values.exp !== undefined ? { exp: Number(values.exp) } : {}),
      ...(values['expires-at'] ? { expiresAt: values['expires-at'] } : {}),
    });
    io.stdout.write(`${JSON.stringify({ tenant: values.tenant, ...result })}\n`);
    return 0;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    io.stderr.write(
      `elma token revoke: ${typeof code === 'string' ? `${code}: ` : ''}${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 2;
  } finally {
    await admin.close();
  }
}
