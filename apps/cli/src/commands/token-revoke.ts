import { parseArgs } from 'node:util';
import { loadConfig } from '@elma/infra/config';
import { KeyAdministration } from '@elma/runtime';

const USAGE = 'usage: elma token revoke --tenant T --jti ID [--expires-at ISO-8601]\n';

interface Output {
  write(text: string): unknown;
}

/**
 * Puts a token id of a tenant on the deny list (tokens.db in the data folder,
 * read by every API process on its next request), until `--expires-at` (the
 * token's `exp`) or, by default, the longest any token accepted now can live.
 */
export async function tokenRevokeCommand(argv: string[], io: { stdout: Output; stderr: Output } = process): Promise<number> {
  let values: { tenant?: string; jti?: string; 'expires-at'?: string };
  try {
    values = parseArgs({
      args: argv,
      options: { tenant: { type: 'string' }, jti: { type: 'string' }, 'expires-at': { type: 'string' } },
    }).values;
    if (!values.tenant || !values.jti) throw new Error('--tenant and --jti are required');
  } catch (error) {
    io.stderr.write(`elma token revoke: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }
  const admin = await KeyAdministration.open(loadConfig(process.env, { secrets: 'existing' }));
  try {
    const result = await admin.revokeToken(values.tenant, values.jti, values['expires-at']);
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
