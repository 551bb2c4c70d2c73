import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { makeCertificate } from '@elma/domain/testing';
import { readPdf, renderCertificatePdf } from '@elma/infra';
import { CertificateSigner } from '@elma/infra/certificate/signing';
import { loadConfig } from '@elma/infra/config';
import { SqliteKeyVault } from '@elma/infra/key-vault/sqlite';
import { findRepoRoot } from '@elma/infra/tools';
import { buildState } from '../../bin/bundle-state.mjs';
import type { LoadRow } from './load';

/** Timed runs of each command (the median is reported), after one run that is not counted (disk caches). */
const RUNS = 5;

/** The targets, as multiples of a bare `node -e 0` measured in the same run. */
export const CLI_TARGETS = { help: 10, command: 15 } as const;

/**
 * `npm run bench -- --only cli`: how long the commands people type take, `npx elma …` in the project exactly as
 * typed, from start to exit, beside a bare `node -e 0` measured in the same run on the same machine (the
 * ratio is what the targets bound: Node's own start is the floor). Then the same commands through the bin
 * without npx, which shows what npx itself costs. The PDF certificate is timed beside the JSON one, and its
 * page comparison (the attached certificate rendered again and its pages read back) on its own.
 */
export async function cliBench(log: (message: string) => void): Promise<LoadRow[]> {
  const root = findRepoRoot();
  const state = buildState(join(root, 'dist'), root);
  const folder = mkdtempSync(join(tmpdir(), 'elma-bench-cli-'));
  try {
    const files = await startedFolder(folder);
    const env = shellEnv(files.dataDir);
    const npx = join(dirname(process.execPath), 'npx');
    const bin = join(root, 'node_modules', '.bin', 'elma');
    const time = (command: string, args: string[]) => medianMs(command, args, root, env);
    const rows: LoadRow[] = [
      { what: 'load average at the start (1, 5, 15 min)', figure: loadAverage() },
      {
        what: 'what the bin runs',
        figure: state.current ? 'the build (dist/, current)' : `the sources under tsx: ${state.reason} (npm run build to time the build)`,
      },
    ];
    log('node -e 0');
    const node = time(process.execPath, ['-e', '0']);
    rows.push({ what: `node -e 0 (median of ${RUNS})`, figure: ms(node) });

    const commands: { args: string[]; what: string; target?: number }[] = [
      { args: ['--help'], what: 'elma --help', target: CLI_TARGETS.help },
      { args: ['token', '--help'], what: 'elma token --help', target: CLI_TARGETS.help },
      { args: ['token'], what: 'elma token', target: CLI_TARGETS.command },
      {
        args: ['verify-certificate', files.json, '--jwks', files.jwks],
        what: 'elma verify-certificate cert.json',
        target: CLI_TARGETS.command,
      },
      { args: ['verify-certificate', files.pdf, '--jwks', files.jwks], what: 'elma verify-certificate cert.pdf' },
    ];
    const viaNpx = new Map<string, number>();
    for (const { args, what, target } of commands) {
      log(`npx ${what}`);
      const median = time(npx, ['elma', ...args]);
      viaNpx.set(what, median);
      const ratio = median / node;
      rows.push({
        what: `npx ${what}`,
        figure: `${ms(median)}, ${ratio.toFixed(1)}x node -e 0`,
        ...(target ? { target: `<= ${target}x`, ok: ratio <= target } : {}),
      });
    }
    const pdfOverJson = viaNpx.get('elma verify-certificate cert.pdf')! - viaNpx.get('elma verify-certificate cert.json')!;
    rows.push({ what: '  the PDF over the JSON (read the PDF, compare its page)', figure: ms(pdfOverJson) });
    rows.push({
      what: '  of which the page comparison (render the certificate again, read its page back; warm process)',
      figure: ms(await pageComparisonMs(files.signed)),
    });

    for (const { args, what } of commands) {
      log(`bin ${what}`);
      const median = time(bin, args);
      rows.push({ what: `  without npx: node_modules/.bin/${what}`, figure: `${ms(median)}, ${(median / node).toFixed(1)}x node -e 0` });
    }
    rows.push({ what: 'load average at the end', figure: loadAverage() });
    return rows;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/**
 * A data folder as `elma start` leaves it (secrets, key vault), its public keys as `elma keys export` writes them,
 * and a certificate signed with its key, as JSON and as the PDF ELMA renders.
 */
async function startedFolder(folder: string) {
  const dataDir = join(folder, 'data');
  const config = loadConfig({ ELMA_DATA_DIR: dataDir });
  const vault = new SqliteKeyVault({ path: join(dataDir, 'keys.db'), masterKey: config.masterKey });
  try {
    const signer = new CertificateSigner({ keyring: () => vault.signingKeyring() });
    const signed = signer.sign(makeCertificate({ keyId: signer.keyId, records: 12, contentFingerprint: 'ef'.repeat(32) }));
    const files = { dataDir, signed, json: join(folder, 'cert.json'), pdf: join(folder, 'cert.pdf'), jwks: join(folder, 'keys.json') };
    writeFileSync(files.jwks, JSON.stringify(signer.jwks()));
    writeFileSync(files.json, JSON.stringify(signed, null, 2));
    writeFileSync(files.pdf, await renderCertificatePdf(signed));
    return files;
  } finally {
    await vault.close();
  }
}

/** A shell's environment: none of the npm variables of `npm run bench`, the bench's own data folder. */
function shellEnv(dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!/^npm_/i.test(name) && name !== 'INIT_CWD') env[name] = value;
  return { ...env, ELMA_DATA_DIR: dataDir };
}

/** Wall time from spawn to exit, median of RUNS after one run not counted; a failed run stops the bench. */
function medianMs(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): number {
  const times: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const started = performance.now();
    const result = spawnSync(command, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    const elapsed = performance.now() - started;
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
    if (i > 0) times.push(elapsed);
  }
  return median(times);
}

/**
 * What `verify-certificate` does for a PDF beyond checking its attachment: the certificate rendered again and its
 * page read back (infra/src/certificate/verify.ts, compareVisiblePage), median of RUNS in this process, whose
 * PDF libraries are loaded already (the process figures above include loading them).
 */
async function pageComparisonMs(signed: Parameters<typeof renderCertificatePdf>[0]): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const started = performance.now();
    await readPdf(await renderCertificatePdf(signed));
    if (i > 0) times.push(performance.now() - started);
  }
  return median(times);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ms = (value: number) => `${Math.round(value)} ms`;
const loadAverage = () =>
  `load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
