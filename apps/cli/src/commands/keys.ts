import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CertificateSigner } from '@elma/infra/certificate/signing';
import { DataFolderNotStarted, loadConfig, type ElmaConfig } from '@elma/infra/config';
import { SqliteKeyVault } from '@elma/infra/key-vault/sqlite';
import type { KeyAdministration } from '@elma/runtime';
import { apiUrlOf } from '../api-client';

const USAGE = `usage: elma keys rotate --master | --tenant T | --signing  [--batch-size N] [--pause-ms MS]
       elma keys status [--tenant T]
       elma keys export [--out jwks.json] [--online]
`;

interface Output {
  write(text: string): unknown;
}

/**
 * Key rotation on the data folder's key vault, beside a running ELMA (no
 * downtime): `--master` re-wraps every tenant key under ELMA_MASTER_KEY (the
 * replaced key given in ELMA_MASTER_KEY_PREVIOUS), `--tenant T` gives the
 * tenant a new key and re-wraps its data keys, `--signing` makes a new
 * certificate signing key current (the old one stays published). Each is
 * idempotent: after a crash, run the same command again to finish. `export` writes the public keys that
 * certificates are signed with (a JWKS, every key ever published) for `elma verify-certificate --jwks FILE`: from
 * the data folder's key vault, or with `--online` from the running service (ELMA_URL, else ELMA_PORT).
 * Exit codes: 0 done, 1 failed (the message says what to do), 2 usage.
 */
export async function keysCommand(argv: string[], io: { stdout: Output; stderr: Output } = process): Promise<number> {
  let values: {
    master?: boolean;
    tenant?: string;
    signing?: boolean;
    'batch-size'?: string;
    'pause-ms'?: string;
    out?: string;
    online?: boolean;
  };
  let action: string | undefined;
  try {
    const parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        master: { type: 'boolean' },
        tenant: { type: 'string' },
        signing: { type: 'boolean' },
        'batch-size': { type: 'string' },
        'pause-ms': { type: 'string' },
        out: { type: 'string' },
        online: { type: 'boolean' },
      },
    });
    values = parsed.values;
    action = parsed.positionals[0];
    if (parsed.positionals.length !== 1 || !['rotate', 'status', 'export'].includes(action ?? '')) {
      throw new Error('expected rotate, status or export');
    }
    if (action !== 'export' && (values.out !== undefined || values.online)) throw new Error('--out and --online go with export');
    const targets = [values.master, values.tenant !== undefined, values.signing].filter(Boolean).length;
    if (action === 'rotate' && targets !== 1) throw new Error('name exactly one of --master, --tenant T, --signing');
  } catch (error) {
    io.stderr.write(`elma keys: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }
  const batchSize = values['batch-size'] === undefined ? 500 : Number(values['batch-size']);
  const pauseMs = values['pause-ms'] === undefined ? 0 : Number(values['pause-ms']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || !Number.isInteger(pauseMs) || pauseMs < 0) {
    io.stderr.write(`elma keys: --batch-size is a whole number from 1, --pause-ms from 0\n${USAGE}`);
    return 2;
  }

  if (action === 'export' && values.online) return exportKeys(await fetchKeys(io), values.out, io);

  let config: ElmaConfig;
  try {
    config = loadConfig(process.env, { secrets: 'existing' });
  } catch (error) {
    io.stderr.write(`elma keys: ${describe(error)}\n`);
    return 1;
  }
  if (action === 'export') {
    let jwks: unknown;
    try {
      jwks = await vaultKeys(config);
    } catch (error) {
      io.stderr.write(`elma keys: ${describe(error)}\n`);
      return 1;
    }
    return exportKeys(jwks, values.out, io);
  }

  let admin: KeyAdministration;
  try {
    // The event log, the audit trail and the use cases come with it: imported here, not for `export`.
    const { KeyAdministration } = await import('@elma/runtime');
    admin = await KeyAdministration.open(config, { batchSize, pauseMs });
  } catch (error) {
    io.stderr.write(`elma keys: ${describe(error)}\n`);
    return 1;
  }
  // One line of JSON, as the README shows it and as the other operator commands print theirs: a grep or `jq -c`
  // copied from the documentation works on it.
  const print = (value: unknown) => io.stdout.write(`${JSON.stringify(value)}\n`);
  try {
    if (action === 'status') {
      print({
        master: await admin.vault.masterKeyStatus(),
        signing: admin.vault.signingKeyring().published.map(({ kid }) => ({
          kid,
          active: kid === admin.vault.signingKeyring().active.kid,
        })),
        ...(values.tenant ? { tenant: await admin.vault.tenantKeyStatus(values.tenant) } : {}),
        rotations: await admin.vault.rotations(10),
      });
    } else if (values.master) {
      const result = await admin.rotateMaster((remaining) => io.stderr.write(`master key rotation: ${remaining} key(s) left\n`));
      print({ rotated: 'master', ...result, next: 'remove ELMA_MASTER_KEY_PREVIOUS from every process and restart them one by one' });
    } else if (values.signing) {
      print({ rotated: 'signing', ...(await admin.rotateSigning()) });
    } else {
      const status = await admin.rotateTenant(values.tenant!, (s) => io.stderr.write(`tenant key rotation: ${s.remaining} row(s) left\n`));
      print({ rotated: 'tenant', ...status });
    }
    return 0;
  } catch (error) {
    io.stderr.write(`elma keys: ${describe(error)}\n(the rotation is safe to resume: run the same command again)\n`);
    return 1;
  } finally {
    await admin.close();
  }
}

/**
 * The public signing keys from the data folder's key vault (keys.db), opened alone: no event log, no other
 * engine. A folder without keys.db is one no ELMA has started; the vault is not created there.
 */
async function vaultKeys(config: ElmaConfig): Promise<unknown> {
  if (config.keyVault.kind !== 'sqlite') {
    throw new Error(`ELMA_KEY_VAULT=${config.keyVault.kind}: there is no keys.db to export from; use elma keys export --online`);
  }
  const path = join(config.dataDir, 'keys.db');
  if (!existsSync(path)) throw new DataFolderNotStarted(config.dataDir, 'keys.db');
  const vault = new SqliteKeyVault({ path, masterKey: config.masterKey, previousMasterKeys: config.previousMasterKeys });
  try {
    return new CertificateSigner({ keyring: () => vault.signingKeyring() }).jwks();
  } finally {
    await vault.close();
  }
}

/** The service's published keys; undefined (said on stderr, with the address) when it cannot be reached. */
async function fetchKeys(io: { stderr: Output }): Promise<unknown> {
  const url = `${apiUrlOf({}, process.env)}/.well-known/elma-keys`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000), headers: { accept: 'application/json' } });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.json();
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
    io.stderr.write(`elma keys: cannot fetch the signing keys from ${url}: ${describe(error)}${cause}\n`);
    return undefined;
  }
}

/** Writes the key set to `out` (or stdout); a key set without keys is refused, as nothing would verify with it. */
async function exportKeys(jwks: unknown, out: string | undefined, io: { stdout: Output; stderr: Output }): Promise<number> {
  if (jwks === undefined) return 1;
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    io.stderr.write('elma keys: the key set has no keys\n');
    return 1;
  }
  const text = `${JSON.stringify(jwks, null, 2)}\n`;
  if (out === undefined) {
    io.stdout.write(text);
    return 0;
  }
  try {
    await writeFile(out, text);
  } catch (error) {
    io.stderr.write(`elma keys: cannot write ${out}: ${describe(error)}\n`);
    return 1;
  }
  io.stderr.write(
    `wrote ${keys.length} signing key(s) to ${out}; verify certificates offline with: elma verify-certificate <file> --jwks ${out}\n`,
  );
  return 0;
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${code}: ${message}` : message;
}
