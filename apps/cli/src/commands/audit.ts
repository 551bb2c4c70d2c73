import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { AuditEntry, verifyChain, type ChainVerification } from '@elma/domain';
import { sha256Hex } from '@elma/application/audit';
import { API_OPTIONS, API_USAGE_NOTE, callApi, processIo, refused, resolveApi, send, type CommandIo, type Output } from '../api-client';

export const AUDIT_USAGE = `usage: elma audit export [--from ISO] [--to ISO] [--out FILE]
       elma audit verify [FILE] [--server]
export: the tenant's audit trail, every entry (one request, streamed; nothing is cut), as JSON lines: one entry
  a line in chain order, as GET /v1/audit answers it; to stdout, or to FILE (written whole or not at all).
  --from is inclusive, --to exclusive (ISO 8601 with an offset). A token with role auditor.
  A data subject who acted is named by their subject pseudonym (psn_), which their erasure forgets. Entries
  without actorRoles were written before that and name every caller by token sub; they are exported as
  stored, since each entry's hash covers its actor and a rewritten copy would no longer verify.
verify FILE: re-computes the hash chain of an export offline (no token, no server): exit 0 intact, 1 broken,
  naming the first bad entry (seq, line, why). A time-window export starts mid-chain: its first link is
  taken from the file. verify without FILE, or with --server: the server re-computes the whole chain.
${API_USAGE_NOTE}
`;

/** `elma audit export|verify`. Exit codes: 0 done or intact, 1 broken, refused or unreachable, 2 usage or unreadable file. */
export async function auditCommand(argv: string[], io: CommandIo = processIo()): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...API_OPTIONS, from: { type: 'string' }, to: { type: 'string' }, out: { type: 'string' }, server: { type: 'boolean' } },
      allowPositionals: true,
    });
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  const { values, positionals } = parsed;
  const [action, file, ...extra] = positionals;
  if (extra.length > 0) return usage(io, `unexpected ${extra.join(' ')}`);
  const api = resolveApi(values, io.env);
  switch (action) {
    case 'export': {
      if (file !== undefined) return usage(io, `export takes no file argument (use --out ${file})`);
      for (const [name, value] of [
        ['--from', values.from],
        ['--to', values.to],
      ] as const)
        if (value !== undefined && !isIsoInstant(value))
          return usage(io, `${name} takes an ISO 8601 time with an offset, e.g. 2026-12-01T00:00:00Z`);
      if (!api.token) return usage(io, 'no token: set ELMA_TOKEN or pass --token (role auditor)');
      const query = new URLSearchParams();
      if (values.from) query.set('from', values.from);
      if (values.to) query.set('to', values.to);
      return exportAudit(io, api, query, values.out);
    }
    case 'verify': {
      if (file === undefined || values.server) {
        if (!api.token) return usage(io, 'no token for the server check: set ELMA_TOKEN or pass --token (role auditor)');
        const answer = await callApi(api, 'POST', '/v1/audit/verify');
        if (answer.status !== 200) return refused(io, answer);
        const result = answer.body as ChainVerification;
        const code = printVerification(io, result, 'on the server');
        if (file === undefined || code !== 0) return code;
      }
      return verifyFile(io, file);
    }
    default:
      return usage(io, `unknown action ${action ?? '(none)'}`);
  }
}

/**
 * Streams the export to its destination line by line, checking each line is an audit entry and that seqs run
 * on without a gap (the entries of a time window are consecutive in the chain), so that an answer cut short
 * fails here instead of leaving a file that looks complete. A file goes to FILE.partial and is renamed at the end.
 */
async function exportAudit(io: CommandIo, api: ReturnType<typeof resolveApi>, query: URLSearchParams, out: string | undefined) {
  const response = await send(api, 'GET', `/v1/audit${query.size ? `?${query}` : ''}`, { accept: 'application/x-ndjson' });
  if (response.status !== 200) {
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return refused(io, { status: response.status, contentType: '', bytes: Buffer.from(text), text, body });
  }
  const partial = out === undefined ? undefined : `${out}.partial`;
  const sink = partial === undefined ? undefined : createWriteStream(partial, { mode: 0o600 });
  const write = async (line: string) => {
    if (!sink) return void io.stdout.write(line);
    if (!sink.write(line)) await once(sink, 'drain');
  };
  let entries = 0;
  let first: number | undefined;
  let last: number | undefined;
  const fail = async (message: string) => {
    if (sink) {
      sink.destroy();
      await rm(partial!, { force: true });
    }
    io.stderr.write(`elma audit export: ${message}${out ? `; ${out} not written` : ''}\n`);
    return 1;
  };
  try {
    let pending = '';
    const decoder = new TextDecoder();
    const take = async (line: string) => {
      if (line === '') return undefined;
      let parsed;
      try {
        parsed = AuditEntry.safeParse(JSON.parse(line));
      } catch {
        parsed = undefined;
      }
      if (!parsed?.success) return `line ${entries + 1} of the answer is not an audit entry`;
      const { seq } = parsed.data;
      if (last !== undefined && seq !== last + 1) return `the answer jumps from seq ${last} to seq ${seq}`;
      first ??= seq;
      last = seq;
      entries += 1;
      await write(`${line}\n`);
      return undefined;
    };
    for await (const chunk of response.body ?? []) {
      pending += decoder.decode(chunk as Uint8Array, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const problem = await take(line);
        if (problem) return await fail(problem);
      }
    }
    pending += decoder.decode();
    // Every entry the server sends ends with a newline: text after the last one is an answer cut short.
    if (pending !== '') return await fail(`the answer ends in the middle of an entry after ${entries} entries`);
  } catch (error) {
    return fail(`the answer stopped after ${entries} entries (${(error as Error).message})`);
  }
  if (sink) {
    sink.end();
    await once(sink, 'close');
    await rename(partial!, out!);
  }
  const range = first === undefined ? 'none' : `seq ${first}..${last}`;
  io.stderr.write(
    `elma audit export: ${entries} entries (${range})${out ? ` written to ${out}` : ''}; check with: elma audit verify ${out ?? 'FILE'}\n`,
  );
  return 0;
}

/** The offline check of an exported file: JSON lines as `export` writes them, or a JSON array of entries. */
async function verifyFile(io: CommandIo, file: string): Promise<number> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    io.stderr.write(`elma audit verify: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return 2;
  }
  let items: unknown[];
  try {
    items = text.trimStart().startsWith('[') ? (JSON.parse(text) as unknown[]) : linesOf(text);
  } catch (error) {
    io.stderr.write(`elma audit verify: ${file}: ${(error as Error).message}\n`);
    return 1;
  }
  // A time-window export starts after some entry it does not hold; the first entry names it (seq, hash).
  const head = AuditEntry.safeParse(items[0]);
  const after = head.success && head.data.seq > 0 ? { seq: head.data.seq - 1, hash: head.data.prevHash } : undefined;
  const result = verifyChain(items, sha256Hex, after);
  const where = after ? `in ${file} (from seq ${after.seq + 1}; its link to seq ${after.seq} is not in the file)` : `in ${file}`;
  return printVerification(io, result, where, (seq) => {
    const index = seq - (after ? after.seq + 1 : 0);
    const entry = AuditEntry.safeParse(items[index]);
    const line = index < items.length ? `line ${index + 1}` : 'after the last line';
    return entry.success ? `${line}, requestId ${entry.data.requestId}, time ${entry.data.time}` : line;
  });
}

function linesOf(text: string): unknown[] {
  return text
    .split('\n')
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => line.trim() !== '')
    .map(({ line, i }) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        // Kept in place, so the chain check names it as unparseable at its seq.
        return { unparseableLine: i + 1 };
      }
    });
}

const REASONS: Record<string, string> = {
  hash_mismatch: 'the entry was changed after it was written (its hash does not match its content)',
  prev_hash_mismatch: 'the entry does not link to the one before it (an entry before it was changed or replaced)',
  seq_gap: 'an entry is missing or out of order',
  unparseable: 'the entry is not an audit entry',
};

function printVerification(
  io: { stdout: Output; stderr: Output },
  result: ChainVerification,
  where: string,
  locate?: (seq: number) => string,
): number {
  if (result.ok) {
    io.stdout.write(`audit chain OK ${where}: ${result.checked} entries\n`);
    return 0;
  }
  const { seq, reason } = result.firstBroken;
  const located = locate ? ` (${locate(seq)})` : '';
  io.stderr.write(
    `audit chain BROKEN ${where}: first bad entry seq ${seq}${located}: ${reason}, ${REASONS[reason] ?? reason}; ${result.checked} entries before it verified\n`,
  );
  return 1;
}

const isIsoInstant = (value: string) =>
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value));

function usage(io: { stderr: Output }, message: string): number {
  io.stderr.write(`elma audit: ${message}\n${AUDIT_USAGE}`);
  return 2;
}
