import { ApiUnreachable } from './api-client';
import { TemporalUnreachable } from './temporal-target';

// Every command is imported when it runs, not before: `elma token` loads what minting needs and `elma --help`
// loads nothing but this table, while `elma start` pays for NestJS, Temporal and the index when it starts
// them. A static import of a command here (or of a barrel such as `@elma/infra` in a light command) undoes
// that; apps/cli/src/lazy-commands.e2e.spec.ts fails when it happens.

interface Command {
  /** Options, as the usage line shows them. */
  synopsis: string;
  summary: string;
  /** More help, from the command's own module (loaded for `elma <command> --help` only). */
  usage?: () => Promise<string>;
  run(argv: string[]): Promise<number | undefined>;
}

const COMMANDS: Record<string, Command> = {
  start: {
    synopsis: '',
    summary:
      'run ELMA embedded: API, worker, projection, Temporal dev server (npm start).\n' +
      'Owns its data folder (ELMA_DATA_DIR) while it runs: a second process on the same folder refuses to start.',
    run: async (argv) => (await import('./commands/start')).startCommand(argv),
  },
  api: {
    synopsis: '',
    summary: 'run the API and the projection only (production engines; needs TEMPORAL_ADDRESS)',
    run: async (argv) => (await import('./commands/start')).startCommand(argv, { worker: false }),
  },
  token: {
    synopsis: '[--tenant T] [--sub S] [--name "Display Name"] [--roles a,b] [--purposes a,b] [--clearance C] [--ttl SECONDS]',
    summary:
      'mint a development token signed with the embedded JWT secret (each gets a jti)\n' +
      'elma token revoke --tenant T (--token JWT | --jti ID [--exp SECONDS]): deny that token until it expires',
    run: async (argv) => (await import('./commands/token')).tokenCommand(argv),
  },
  keys: {
    synopsis: 'rotate --master|--tenant T|--signing [--batch-size N] [--pause-ms MS] | status [--tenant T] | export [--out F] [--online]',
    summary:
      'rotate the master key (ELMA_MASTER_KEY new, ELMA_MASTER_KEY_PREVIOUS old), a tenant key or the certificate signing key,\n' +
      'online and resumable (run the same command again after a failure); `status` shows keys and rotations;\n' +
      '`export` writes the certificate signing public keys (JWKS) for offline `verify-certificate --jwks F`',
    run: async (argv) => (await import('./commands/keys')).keysCommand(argv),
  },
  rebuild: {
    synopsis: '--tenant T',
    summary:
      "drop a tenant's views and replay its log (ReindexWorkflow on Temporal; stages on stderr, the result as JSON on stdout).\n" +
      'Temporal: TEMPORAL_ADDRESS, else TEMPORAL_PORT, else the dev server of the elma start on ELMA_DATA_DIR, else 127.0.0.1:7233.',
    run: async (argv) => (await import('./commands/rebuild')).rebuildCommand(argv),
  },
  worker: {
    synopsis: '',
    summary: 'run a Temporal worker alone (needs TEMPORAL_ADDRESS; no API, no projection)',
    run: async (argv) => (await import('./commands/worker')).workerCommand(argv),
  },
  tenants: {
    synopsis: 'offboard|approve|status|certificate <tenant> [<requestId>] [--reason R] [--export] [--wait] [--out FILE]',
    summary:
      'tenant off-boarding through the API, as a platform admin (ELMA_TOKEN, ELMA_URL): ask, approve (another admin), follow, get the certificate',
    run: async (argv) => (await import('./commands/tenants')).tenantsCommand(argv),
  },
  mcp: {
    synopsis: '[--http [--port N] [--host H] [--max-sessions N]] [--url URL]',
    summary:
      'serve ELMA as MCP tools (remember, recall, get, forget_request): over stdio as ELMA_TOKEN, or over streamable HTTP\n' +
      "at /mcp (default port 8091, host 127.0.0.1) as each client's Authorization: Bearer token; the API at ELMA_URL or ELMA_PORT",
    run: async (argv) => (await import('./commands/mcp')).mcpCommand(argv),
  },
  'verify-certificate': {
    synopsis: '<file.json|file.pdf> [--jwks <file-or-url> | --online] [--file <export.json|export.pdf>]...',
    summary:
      'verify an erasure certificate (JSON, or the PDF with its signed JSON attached), a subject-access manifest (and,\n' +
      'with --file, its export files) or a tenant off-boarding certificate, offline (keys: --jwks FILE or\n' +
      'ELMA_CERTIFICATE_KEYS; the service only with --online); exits 1 if it was altered',
    run: async (argv) => (await import('./commands/verify-certificate')).verifyCertificateCommand(argv),
  },
  backup: {
    synopsis: '--to <folder> [--data-dir D] [--include-secrets]',
    summary:
      'copy the embedded engines consistently (SQLite online backup), while ELMA runs or not.\n' +
      'The erasure ledger is never copied; master.key and jwt.secret only with --include-secrets.',
    run: async (argv) => (await import('./commands/backup')).backupCommand(argv),
  },
  restore: {
    synopsis: '--from <folder> [--data-dir D] [--without-ledger [--accept-ledger-loss]]',
    summary:
      'restore a backup into a stopped data folder, after checking every file against the manifest.\n' +
      'Erasures the ledger holds from after the backup are applied again at the next start, before the API serves.',
    run: async (argv) => (await import('./commands/restore')).restoreCommand(argv),
  },
  audit: {
    synopsis: 'export [--from ISO] [--to ISO] [--out FILE] | verify [FILE] [--server]',
    summary: "export the tenant's audit trail as JSON lines; verify its hash chain offline or on the server",
    usage: async () => (await import('./commands/audit')).AUDIT_USAGE,
    run: async (argv) => (await import('./commands/audit')).auditCommand(argv),
  },
  erasure: {
    synopsis: 'list|status <id> [--wait]|request ...|approve <id>|certificate <id> [--pdf] [--out FILE]|reapply|ledger',
    summary: 'erasures over the API: list, follow, request, approve, fetch the certificate; the erasure ledger',
    usage: async () => (await import('./commands/erasure')).ERASURE_USAGE,
    run: async (argv) => (await import('./commands/erasure')).erasureCommand(argv),
  },
  erasures: {
    synopsis: 'reapply [--after N] | status',
    summary: 'the older names of `elma erasure reapply | ledger` (the erasure ledger), kept for scripts',
    run: async (argv) => (await import('./commands/erasures')).erasuresCommand(argv),
  },
  bench: {
    synopsis:
      '[--only recall|erasure|load|semantic|cli] [--sizes 10000,100000] [--closures 10,100,1000] [--load] [--load-clients 16,64,256] [--load-seconds 60] [--load-seed 5000] [--no-load-sweep]',
    summary: 'print throughput and latency figures (npm run bench)',
    run: async (argv) => (await import('./commands/bench')).benchCommand(argv),
  },
  'bench-peers': {
    synopsis: '[--sizes 10000,100000] [--systems elma,mem0,langgraph] [--queries 300] [--add-sample 200] [--batch 20] [--limit 30]',
    summary:
      'ELMA beside Mem0 OSS (FAISS) and LangGraph SqliteStore, same corpus and vectors, no LLM: add/s, search p50/p95\n' +
      'and ELMA/peer ratios (npm run bench:peers; installs the peers into .tools/mem0 and .tools/langgraph on first use)',
    run: async (argv) => (await import('./commands/bench-peers')).benchPeersCommand(argv),
  },
  eval: {
    synopsis: '[--seeds N] [--quick] [--out FILE] [--only W1,W3] [--systems ELMA,B3] [--budget T] [--locomo-json FILE]',
    summary:
      "the paper's evaluation (§7): workloads W1-W5 against ELMA, its ablations and the baselines; writes docs/evaluation.md\n" +
      'and its plots (npm run eval). --quick: one seed at scale 0.2, exits 1 unless every table is filled.\n' +
      'Task success needs a model: ELMA_EVAL_MODEL_URL (OpenAI-compatible), ELMA_EVAL_MODEL, ELMA_EVAL_MODEL_KEY.',
    run: async (argv) => (await import('./commands/eval')).evalCommand(argv),
  },
  'eval-locomo': {
    synopsis: '[--data DIR] [--samples N] [--json FILE]',
    summary: 'LoCoMo retrieval evaluation (npm run eval:locomo)',
    run: async (argv) => (await import('./commands/eval-locomo')).evalLocomoCommand(argv),
  },
  'eval-bilingual': {
    synopsis: '[--split open|sealed|all] [--json FILE]',
    summary: 'bilingual recall evaluation: English and Chinese questions across and within languages (npm run eval:bilingual)',
    usage: async () => (await import('./commands/eval-bilingual')).EVAL_BILINGUAL_USAGE,
    run: async (argv) => (await import('./commands/eval-bilingual')).evalBilingualCommand(argv),
  },
};

const isHelp = (arg: string) => arg === '--help' || arg === '-h';

const USAGE = `elma <command> [options]      (elma <command> --help for one command)

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => {
    const head = `  ${name}${c.synopsis ? ` ${c.synopsis}` : ''}`;
    const summary = c.summary.split('\n')[0];
    return head.length < 32 ? `${head.padEnd(32)}${summary}` : `${head}\n${' '.repeat(32)}${summary}`;
  })
  .join('\n')}
`;

const commandHelp = async (name: string, command: Command) =>
  `usage: elma ${name}${command.synopsis ? ` ${command.synopsis}` : ''}\n\n${command.summary}\n${command.usage ? `\n${await command.usage()}` : ''}`;

/** ConfigError, DataFolderNotStarted (infra/src/config): told by their code, so this table imports no config module. */
function isConfigRefusal(error: unknown): error is Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('CONFIG.');
}

/** Returns the exit code for commands that finish; `start` runs until interrupted. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || isHelp(name)) {
    process.stdout.write(USAGE);
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    process.stderr.write(`unknown command: ${name}\n\n${USAGE}`);
    return 2;
  }
  // Before the command parses anything: `elma start --help` must print help and start nothing.
  if (rest.some(isHelp)) {
    process.stdout.write(await commandHelp(name, command));
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    // Nothing answered where the command looked, or the configuration points nowhere usable (a data folder no
    // ELMA has started, an invalid variable): say where, and how to point it elsewhere; no stack.
    if (error instanceof ApiUnreachable || error instanceof TemporalUnreachable || isConfigRefusal(error)) {
      process.stderr.write(`elma ${name}: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
