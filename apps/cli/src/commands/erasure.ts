import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { ERASURE_STEPS, ErasureReason, ErasureStatus, type ErasureProgress } from '@elma/domain';
import {
  API_OPTIONS,
  API_USAGE_NOTE,
  callApi,
  processIo,
  refused,
  report,
  resolveApi,
  type ApiTarget,
  type CommandIo,
} from '../api-client';
import { startProgress } from '../progress';
import { erasureLedgerCommand } from './erasures';

export const ERASURE_USAGE = `usage: elma erasure list [--status S] [--json]
       elma erasure status <requestId> [--wait] [--json]
       elma erasure request --reason R (--subject S | --records ID,ID | --from ISO --to ISO [--subject S]
                            | --content-file FILE | --fingerprint HEX)
       elma erasure approve <requestId>
       elma erasure certificate <requestId> [--pdf] [--out FILE]
       elma erasure reapply [--after N] [--certificates DIR [--rebind [--accept-ledger-loss]]] | elma erasure ledger
Over the API, with a token of role compliance or dpo (a data subject: their own requests; approve: dpo, not the
requester). list: every erasure of the tenant, page after page, newest first as the API orders them; --json:
one JSON object a line. status: the steps; --wait follows it (progress on stderr) until it ends: exit 0 certified,
1 otherwise. request: reasons ${ErasureReason.options.join(', ')}; --content-file: the text to look for, read from a
file (not the command line, which other users see). certificate: the signed JSON (or --pdf) to stdout or --out.
reapply, ledger: the erasure ledger on the configured engines, with ELMA stopped (elma erasures reapply|status);
--certificates DIR: check the ledger against the signed certificates there and add what it lacks; --rebind: the
ledger is lost, rebuild it from them (refused when they cover fewer entries than the data saw, unless
--accept-ledger-loss).
${API_USAGE_NOTE}
`;

const WAIT_POLL_MS = 1_000;
const PAGE_SIZE = 100;
const RUNNING: ReadonlySet<string> = new Set<ErasureStatus>(['running', 'awaiting_approval']);

/** Exit codes: 0 done, 1 refused by the API (its problem+json on stderr), unreachable, or not certified (--wait), 2 usage. */
export async function erasureCommand(argv: string[], io: CommandIo = processIo()): Promise<number> {
  const [action, ...rest] = argv;
  if (action === 'reapply' || action === 'ledger') return erasureLedgerCommand(action, rest);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: {
        ...API_OPTIONS,
        status: { type: 'string' },
        json: { type: 'boolean', default: false },
        wait: { type: 'boolean', default: false },
        reason: { type: 'string' },
        subject: { type: 'string' },
        records: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        'content-file': { type: 'string' },
        fingerprint: { type: 'string' },
        pdf: { type: 'boolean', default: false },
        out: { type: 'string' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const { values, positionals } = parsed;
  const api = resolveApi(values, io.env);
  if (!api.token) return usage(io, 'no token: set ELMA_TOKEN or pass --token');
  const id = positionals[0];
  const needsId = () => (id === undefined || positionals.length > 1 ? usage(io, `${action} takes one request id`) : undefined);

  switch (action) {
    case 'list': {
      if (positionals.length > 0) return usage(io, 'list takes no argument');
      if (values.status !== undefined && !ErasureStatus.safeParse(values.status).success)
        return usage(io, `--status is one of ${ErasureStatus.options.join(', ')}`);
      return list(io, api, values.status, values.json);
    }
    case 'status':
      return needsId() ?? status(io, api, id, values);
    case 'approve':
      return needsId() ?? report(io, await callApi(api, 'POST', `/v1/erasures/${encodeURIComponent(id)}/approve`));
    case 'certificate':
      return needsId() ?? certificate(io, api, id, values);
    case 'request': {
      if (positionals.length > 0) return usage(io, 'request takes options only');
      let scope;
      try {
        scope = await scopeOf(values);
      } catch (error) {
        return usage(io, (error as Error).message);
      }
      if (!values.reason) return usage(io, `--reason is required: ${ErasureReason.options.join(', ')}`);
      const answer = await callApi(api, 'POST', '/v1/erasures', { body: { scope, reason: values.reason } });
      const code = report(io, answer);
      const requestId = (answer.body as Partial<ErasureProgress> | undefined)?.requestId;
      if (code === 0 && requestId) io.stderr.write(`follow it with: elma erasure status ${requestId} --wait\n`);
      return code;
    }
    default:
      return usage(io, `unknown action ${action ?? '(none)'}`);
  }
}

/** The scope options as the API's `scope` (the API validates it; this only picks the one given). */
async function scopeOf(values: {
  subject?: string;
  records?: string;
  from?: string;
  to?: string;
  'content-file'?: string;
  fingerprint?: string;
}): Promise<unknown> {
  const given = [
    values.records !== undefined,
    values.from !== undefined || values.to !== undefined,
    values['content-file'] !== undefined,
    values.fingerprint !== undefined,
  ].filter(Boolean).length;
  if (given > 1 || (given === 1 && values.subject !== undefined && values.from === undefined))
    throw new Error('name one scope: --subject, --records, --from/--to (with --subject or not), --content-file or --fingerprint');
  if (values.records !== undefined) {
    const recordIds = values.records
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return { type: 'records', recordIds };
  }
  if (values.from !== undefined || values.to !== undefined) {
    if (!values.from || !values.to) throw new Error('a time range needs both --from and --to');
    return { type: 'time_range', from: values.from, to: values.to, ...(values.subject ? { subject: values.subject } : {}) };
  }
  if (values['content-file'] !== undefined) {
    let text: string;
    try {
      text = await readFile(values['content-file'], 'utf8');
    } catch (error) {
      throw new Error(`cannot read --content-file ${values['content-file']}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
    return { type: 'content', text: text.replace(/\r?\n$/, '') };
  }
  if (values.fingerprint !== undefined) return { type: 'fingerprint', fingerprint: values.fingerprint };
  if (values.subject !== undefined) return { type: 'subject', subject: values.subject };
  throw new Error('name a scope: --subject, --records, --from/--to, --content-file or --fingerprint');
}

/** Every page of `GET /v1/erasures`, following `nextCursor` to its end; a cursor seen twice stops it (1). */
async function list(io: CommandIo, api: ApiTarget, statusFilter: string | undefined, json: boolean): Promise<number> {
  const items: ErasureProgress[] = [];
  const seen = new Set<string>();
  for (let cursor: string | null = null; ;) {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (statusFilter) query.set('status', statusFilter);
    if (cursor) query.set('cursor', cursor);
    const answer = await callApi(api, 'GET', `/v1/erasures?${query}`);
    if (answer.status !== 200) return refused(io, answer);
    const page = answer.body as { items?: ErasureProgress[]; nextCursor?: string | null } | undefined;
    if (!page || !Array.isArray(page.items)) {
      io.stderr.write(`elma erasure list: the API at ${api.url} answered something that is not a page of erasures\n`);
      return 1;
    }
    for (const item of page.items) {
      if (json) io.stdout.write(`${JSON.stringify(item)}\n`);
      else items.push(item);
    }
    cursor = page.nextCursor ?? null;
    if (cursor === null) break;
    if (seen.has(cursor)) {
      io.stderr.write('elma erasure list: the API gave the same page cursor twice; stopped (the list above is incomplete)\n');
      return 1;
    }
    seen.add(cursor);
  }
  if (!json) io.stdout.write(table(items));
  return 0;
}

function table(items: ErasureProgress[]): string {
  if (items.length === 0) return 'no erasures\n';
  const rows = [
    ['REQUEST', 'STATUS', 'REASON', 'STEP', 'CLOSURE', 'CERTIFICATE'],
    ...items.map((e) => [
      e.requestId,
      e.status,
      e.reason,
      e.currentStep ?? '-',
      e.closureSize === null ? '-' : String(e.closureSize),
      e.certificateAvailable ? 'yes' : 'no',
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return `${rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n${items.length} erasure(s)\n`;
}

async function status(io: CommandIo, api: ApiTarget, id: string, values: { wait: boolean; json: boolean }): Promise<number> {
  const path = `/v1/erasures/${encodeURIComponent(id)}`;
  let answer = await callApi(api, 'GET', path);
  if (values.wait && answer.status === 200) {
    const progress = startProgress({ label: `erasure ${id}`, total: ERASURE_STEPS.length, unit: 'steps', stream: io.stderr });
    for (;;) {
      const state = answer.body as ErasureProgress;
      const detail =
        state.status === 'awaiting_approval'
          ? `awaiting approval${state.approvalDeadline ? ` until ${state.approvalDeadline}` : ''}`
          : (state.currentStep ?? state.status);
      if (!RUNNING.has(state.status)) {
        progress.finish(state.status);
        break;
      }
      progress.update(state.steps.length, detail);
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      answer = await callApi(api, 'GET', path);
      if (answer.status !== 200) {
        progress.finish('stopped');
        break;
      }
    }
  }
  if (answer.status !== 200) return refused(io, answer);
  const state = answer.body as ErasureProgress;
  io.stdout.write(values.json ? `${JSON.stringify(state, null, 2)}\n` : describeErasure(state));
  return values.wait && !(state.status === 'completed' && state.certificateAvailable) ? 1 : 0;
}

/** The steps as a compliance officer reads them: done (with time and attempts), the current one, those to come. */
export function describeErasure(e: ErasureProgress): string {
  const done = new Map(e.steps.map((s) => [s.step, s]));
  const lines = [
    `erasure ${e.requestId} (tenant ${e.tenant}, reason ${e.reason}): ${e.status}` +
      `${e.closureSize === null ? '' : `, closure ${e.closureSize} record(s)`}${e.certificateAvailable ? ', certificate available' : ''}`,
  ];
  for (const step of ERASURE_STEPS) {
    const record = done.get(step);
    if (record) {
      const seconds = (Date.parse(record.finishedAt) - Date.parse(record.startedAt)) / 1000;
      const counts = record.counts
        ? ` ${Object.entries(record.counts)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')}`
        : '';
      lines.push(`  [x] ${step.padEnd(14)} ${record.finishedAt}  ${seconds.toFixed(1)} s, ${record.attempts} attempt(s)${counts}`);
    } else if (step === e.currentStep) {
      lines.push(
        `  [>] ${step.padEnd(14)} ${e.status === 'awaiting_approval' ? `awaiting approval${e.approvalDeadline ? ` until ${e.approvalDeadline}` : ''}` : 'in progress'}`,
      );
    } else {
      lines.push(`  [ ] ${step}`);
    }
  }
  if (e.approvedBy) lines.push(`  approved by ${e.approvedByName ? `${e.approvedByName} (${e.approvedBy})` : e.approvedBy}`);
  if (e.blockedByLegalHold.length > 0) lines.push(`  kept under legal hold: ${e.blockedByLegalHold.length} record(s)`);
  if (e.failure) lines.push(`  stopped: ${e.failure.code}: ${e.failure.message}`);
  return `${lines.join('\n')}\n`;
}

async function certificate(io: CommandIo, api: ApiTarget, id: string, values: { pdf: boolean; out?: string }): Promise<number> {
  if (values.pdf && !values.out && io.stdout.isTTY) return usage(io, '--pdf writes a binary file: give --out FILE (or redirect stdout)');
  const path = `/v1/erasures/${encodeURIComponent(id)}/certificate${values.pdf ? '.pdf' : ''}`;
  const answer = await callApi(api, 'GET', path, { accept: values.pdf ? 'application/pdf' : 'application/json' });
  if (answer.status !== 200) return refused(io, answer);
  const bytes = values.pdf ? answer.bytes : Buffer.from(`${JSON.stringify(answer.body, null, 2)}\n`);
  if (!values.out) {
    io.stdout.write(bytes);
    return 0;
  }
  await writeFile(values.out, bytes, { mode: 0o600 });
  io.stderr.write(`certificate written to ${values.out}; check it with: elma verify-certificate ${values.out}\n`);
  return 0;
}

function usage(io: CommandIo, message: string): number {
  io.stderr.write(`elma erasure: ${message}\n${ERASURE_USAGE}`);
  return 2;
}
