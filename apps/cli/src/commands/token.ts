import { parseArgs } from 'node:util';
import { loadConfig, mintToken } from '@elma/infra';

const list = (value: string | undefined, fallback: string[]) =>
  value === undefined ? fallback : value.split(',').map((s) => s.trim()).filter(Boolean);

/** Mints a development token for the embedded default (signed with the secret in the data folder). */
export async function tokenCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenant: { type: 'string', default: 'acme' },
      sub: { type: 'string', default: 'dev-agent' },
      roles: { type: 'string' },
      purposes: { type: 'string' },
      clearance: { type: 'string', default: 'internal' },
      ttl: { type: 'string', default: String(8 * 3600) },
    },
  });
  const config = loadConfig();
  const token = await mintToken(
    config.jwtSecret,
    {
      tenant: values.tenant!,
      sub: values.sub!,
      roles: list(values.roles, ['agent']),
      purposes: list(values.purposes, ['support']),
      clearance: values.clearance as 'internal',
    },
    { ttlSeconds: Number(values.ttl) },
  );
  process.stdout.write(`${token}\n`);
  return 0;
}
