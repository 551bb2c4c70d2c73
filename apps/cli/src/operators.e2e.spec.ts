import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASURE_STEPS } from '@elma/domain';
import { callApi, changePolicy, chatEvent, roleTokens, startTestApp, type TestApp } from '../../api/src/testing';
import { elmaArgs } from '../../../tests/support/elma-process';
import { auditCommand } from './commands/audit';
import { erasureCommand } from './commands/erasure';

/**
 * `elma audit` and `elma erasure` as an operator runs them: real `elma` processes against a real ELMA over
 * HTTP, with the erasure workflow on the run's Temporal server. The API runs in this process, so the CLI is
 * spawned asynchronously (a synchronous spawn would block the server it talks to).
 */
let t: TestApp;
const tokens: Record<string, string> = {};
const dir = mkdtempSync(join(tmpdir(), 'elma-operators-'));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  bytes: Buffer;
}

function elma(args: string[], token: string, extraEnv: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, elmaArgs(...args), {
      env: { ...process.env, ELMA_URL: t.url, ELMA_TOKEN: token, ELMA_PORT: '1', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const bytes = Buffer.concat(out);
      resolve({ code, stdout: bytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), bytes });
    });
  });
}

/** The same command in this process (same code, same HTTP), for the cases that need no process of their own. */
async function inProcess(command: typeof auditCommand, args: string[], token: string): Promise<Run> {
  const out: Buffer[] = [];
  const err: string[] = [];
  const code = await command(args, {
    stdout: { write: (chunk) => out.push(Buffer.from(chunk)) },
    stderr: { write: (chunk) => err.push(String(chunk)) },
    env: { ELMA_URL: t.url, ELMA_TOKEN: token },
  });
  const bytes = Buffer.concat(out);
  return { code, stdout: bytes.toString('utf8'), stderr: err.join(''), bytes };
}

const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);
// Each `elma` process compiles the CLI's sources first: slow on a loaded machine.
const SLOW = { timeout: 300_000 };

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  Object.assign(tokens, await roleTokens(t, ['agent', 'compliance', 'dpo', 'admin', 'auditor']));
  tokens.dpo2 = await t.token({ sub: 'dpo-2', roles: ['dpo'], purposes: ['support'], clearance: 'restricted', name: '王芳' });
  tokens.other = await t.token({ tenant: 'globex', sub: 'auditor-9', roles: ['auditor', 'compliance'], purposes: ['support'] });
  const ingest = await call('agent', 'POST', '/v1/events', {
    events: [chatEvent('cust-1', '王芳的会员卡号记在第二本册子里'), chatEvent('cust-2', 'Marigold prefers invoices by post')],
  });
  expect(ingest.status, ingest.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
  // A trail of a few entries: each check is audited.
  for (let i = 0; i < 4; i++) expect((await call('auditor', 'POST', '/v1/audit/verify')).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('elma audit export | verify', SLOW, () => {
  const file = join(dir, 'audit.jsonl');

  it('exports every entry of the tenant as JSON lines, in chain order, to a file only the owner reads', async () => {
    const run = await elma(['audit', 'export', '--out', file], tokens.auditor);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const seqs = lines.map((line) => JSON.parse(line).seq as number);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(lines.length).toBeGreaterThan(2);
    expect(run.stderr).toContain(`${lines.length} entries (seq 0..${lines.length - 1}) written to ${file}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(`${file}.partial`)).toBe(false);
  });

  it('verifies the exported file offline: no token, no server', async () => {
    const run = await elma(['audit', 'verify', file], '', { ELMA_URL: 'http://127.0.0.1:1' });
    expect(run.code, run.stderr).toBe(0);
    const count = readFileSync(file, 'utf8').trimEnd().split('\n').length;
    expect(run.stdout).toBe(`audit chain OK in ${file}: ${count} entries\n`);
  });

  it('exits 1 on an edited entry and names the first bad one', async () => {
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const entry = JSON.parse(lines[1]);
    lines[1] = JSON.stringify({ ...entry, actor: 'someone-else' });
    const tampered = join(dir, 'tampered.jsonl');
    writeFileSync(tampered, `${lines.join('\n')}\n`);
    const run = await inProcess(auditCommand, ['verify', tampered], '');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`first bad entry seq 1 (line 2, requestId ${entry.requestId}, time ${entry.time}): hash_mismatch`);

    const removed = join(dir, 'removed.jsonl');
    writeFileSync(removed, `${[lines[0], ...lines.slice(3)].join('\n')}\n`);
    const gap = await inProcess(auditCommand, ['verify', removed], '');
    expect(gap.code).toBe(1);
    expect(gap.stderr).toContain('first bad entry seq 1 (line 2');
    expect(gap.stderr).toContain('seq_gap');
  });

  it('exports a time window that verifies from its first entry, and asks the server for the whole chain', async () => {
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const from = JSON.parse(lines[2]).time as string;
    const window = join(dir, 'window.jsonl');
    const run = await inProcess(auditCommand, ['export', '--from', from, '--out', window], tokens.auditor);
    expect(run.code, run.stderr).toBe(0);
    const first = JSON.parse(readFileSync(window, 'utf8').split('\n')[0]);
    expect(first.seq).toBeGreaterThan(0);
    const verified = await inProcess(auditCommand, ['verify', window], '');
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`(from seq ${first.seq}; its link to seq ${first.seq - 1} is not in the file)`);

    const server = await inProcess(auditCommand, ['verify'], tokens.auditor);
    expect(server.code, server.stderr).toBe(0);
    expect(server.stdout).toMatch(/^audit chain OK on the server: \d+ entries\n$/);
  });

  it('refuses another role with the API problem, and bad input before any call', async () => {
    const refused = await inProcess(auditCommand, ['export'], tokens.agent);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('HTTP 403');
    expect(refused.stderr).toContain('AUTH.FORBIDDEN');
    const bad = await inProcess(auditCommand, ['export', '--from', 'yesterday'], tokens.auditor);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--from takes an ISO 8601 time');
  });
});

describe('elma erasure', SLOW, () => {
  let requestId: string;

  it('requests an erasure and follows it to its certificate, progress on stderr and only the result on stdout', async () => {
    const requested = await elma(['erasure', 'request', '--subject', 'cust-1', '--reason', 'subject_request'], tokens.compliance);
    expect(requested.code, requested.stderr).toBe(0);
    requestId = JSON.parse(requested.stdout).requestId;
    expect(requested.stderr).toContain(`elma erasure status ${requestId} --wait`);

    const followed = await elma(['erasure', 'status', requestId, '--wait', '--json'], tokens.compliance);
    expect(followed.code, followed.stderr).toBe(0);
    const progress = JSON.parse(followed.stdout);
    expect(progress).toMatchObject({ requestId, status: 'completed', certificateAvailable: true });
    expect(progress.steps.map((s: { step: string }) => s.step)).toEqual([...ERASURE_STEPS]);
    // Not a terminal here: plain progress lines, the last one the outcome.
    expect(followed.stderr.trimEnd().split('\n').at(-1)).toMatch(new RegExp(`^erasure ${requestId}: .*steps.* · completed · \\d+s$`));
    expect(followed.stderr).not.toContain('\r');

    const shown = await inProcess(erasureCommand, ['status', requestId], tokens.compliance);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`erasure ${requestId} (tenant acme, reason subject_request): completed`);
    expect(shown.stdout).toMatch(/\[x\] certify\s/);
    expect(shown.stdout).not.toContain('cust-1');
  });

  it('fetches the certificate as JSON that verify-certificate accepts, and as a PDF', async () => {
    const json = join(dir, 'cert.json');
    const fetched = await elma(['erasure', 'certificate', requestId, '--out', json], tokens.compliance);
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(statSync(json).mode & 0o777).toBe(0o600);
    // Offline is verify-certificate's default; --online takes the keys from the API this command reaches (ELMA_URL).
    const verified = await elma(['verify-certificate', json, '--online'], '');
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`certificate OK: request ${requestId}, tenant acme`);

    const pdf = await inProcess(erasureCommand, ['certificate', requestId, '--pdf'], tokens.compliance);
    expect(pdf.code, pdf.stderr).toBe(0);
    expect(pdf.bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const pdfFile = join(dir, 'cert.pdf');
    writeFileSync(pdfFile, pdf.bytes);
    const pdfVerified = await elma(['verify-certificate', pdfFile, '--online'], '');
    expect(pdfVerified.code, pdfVerified.stderr).toBe(0);
    expect(pdfVerified.stdout).toContain('PDF OK: the page shows the attached signed certificate');
  });

  it('waits for a second DPO: approve through the CLI, self-approval refused with its code', async () => {
    await changePolicy(t.url, tokens.admin, (p) => (p.erasure = { approvalThreshold: 0, approvalTimeoutHours: 1 }));
    const requested = await inProcess(erasureCommand, ['request', '--subject', 'cust-2', '--reason', 'subject_request'], tokens.dpo);
    expect(requested.code, requested.stderr).toBe(0);
    const id = JSON.parse(requested.stdout).requestId as string;
    for (let i = 0; i < 300 && (await call('dpo', 'GET', `/v1/erasures/${id}`)).body.status !== 'awaiting_approval'; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const shown = await inProcess(erasureCommand, ['status', id], tokens.dpo);
    expect(shown.stdout).toMatch(/\[>\] approval\s+awaiting approval until /);

    const self = await inProcess(erasureCommand, ['approve', id], tokens.dpo);
    expect(self.code).toBe(1);
    expect(self.stderr).toContain('ERASURE.SELF_APPROVAL');
    const approved = await inProcess(erasureCommand, ['approve', id], tokens.dpo2);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout).approvedBy).toBe('dpo-2');
    const followed = await inProcess(erasureCommand, ['status', id, '--wait'], tokens.dpo);
    expect(followed.code, followed.stderr).toBe(0);
    // The approver's display name (the token's `name` claim) with the id.
    expect(followed.stdout).toContain('approved by 王芳 (dpo-2)');
  });

  it("answers 404 for another tenant's erasure, as the API does", async () => {
    const run = await inProcess(erasureCommand, ['status', requestId], tokens.other);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('HTTP 404');
    expect(run.stderr).toContain('ERASURE.NOT_FOUND');
  });

  it('refuses a request with two scopes, or none, before calling the API', async () => {
    const two = await inProcess(erasureCommand, ['request', '--subject', 's', '--records', 'a', '--reason', 'legal'], tokens.compliance);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('name one scope');
    const none = await inProcess(erasureCommand, ['request', '--reason', 'legal'], tokens.compliance);
    expect(none.code).toBe(2);
  });

  it('lists every erasure of the tenant, page after page', async () => {
    const run = await inProcess(erasureCommand, ['list', '--json'], tokens.compliance);
    expect(run.code, run.stderr).toBe(0);
    const items = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(items.map((e: { requestId: string }) => e.requestId)).toContain(requestId);
    const table = await inProcess(erasureCommand, ['list', '--status', 'completed'], tokens.compliance);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(requestId);
    expect((await inProcess(erasureCommand, ['list'], tokens.other)).stdout).not.toContain(requestId);
  });
});
