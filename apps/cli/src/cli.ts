import { rebuildCommand } from './commands/rebuild';
import { startCommand } from './commands/start';
import { tokenCommand } from './commands/token';
import { benchCommand } from './commands/bench';
import { verifyCertificateCommand } from './commands/verify-certificate';
import { workerCommand } from './commands/worker';
import { evalLocomoCommand } from './commands/eval-locomo';

const USAGE = `elma <command> [options]

Commands:
  start                         run ELMA embedded: API, worker, projection, Temporal dev server (npm start)
  api                           run the API and the projection only (production engines; needs TEMPORAL_ADDRESS)
  token [--tenant T] [--sub S] [--roles a,b] [--purposes a,b] [--clearance C] [--ttl SECONDS]
                                mint a development token signed with the embedded JWT secret
  rebuild --tenant T            drop a tenant's views and replay its log (ReindexWorkflow on Temporal)
  worker                        run a Temporal worker alone (needs TEMPORAL_ADDRESS; no API, no projection)
  verify-certificate <file> [--jwks <url-or-file>]
                                verify an erasure certificate offline; exits 1 if it was altered
  bench [--sizes 10000,100000]  print throughput and latency figures (npm run bench)
  eval-locomo [--data DIR] [--samples N] [--json FILE]
                                LoCoMo retrieval evaluation (npm run eval:locomo)
`;

/** Returns the exit code for commands that finish; `start` runs until interrupted. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return startCommand(rest);
    case 'api':
      return startCommand(rest, { worker: false });
    case 'token':
      return tokenCommand(rest);
    case 'rebuild':
      return rebuildCommand(rest);
    case 'bench':
      return benchCommand(rest);
    case 'worker':
      return workerCommand(rest);
    case 'eval-locomo':
      return evalLocomoCommand(rest);
    case 'verify-certificate':
      return verifyCertificateCommand(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}`);
      return 2;
  }
}
