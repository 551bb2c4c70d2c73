import { z } from 'zod';
import { DomainError } from '../shared/errors';
import { parseOrThrow } from '../shared/zod';
import { streams } from '../streams';

/**
 * The audit trail: one entry per API operation that reads, writes, exports,
 * erases or changes policy. Entries of a tenant form a hash chain, so that an
 * edited, removed or reordered entry is detected by `verifyChain`. Entries
 * hold ids and hashes only, never memory content: the trail must survive the
 * erasure of the data it talks about.
 */

export const AuditOperation = z.enum(['read', 'write', 'export', 'erase', 'administer']);
export type AuditOperation = z.infer<typeof AuditOperation>;

/** The role recorded for an entry ELMA makes itself (a retention sweep, the erasure ledger, a workflow's step). */
export const SYSTEM_ROLE = 'system';

/** The prevHash of the first entry of every chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** Hashing comes in from outside: domain stays free of node modules. Returns lowercase hex. */
export type Sha256 = (text: string) => string;

/** The tenant's audit stream. Tenant ids contain no dash (see `streams`). */
export const auditStream = streams.audit;

/** Event type of an entry in `auditStream(tenant)`; its data is the `AuditEntry`. */
export const AUDIT_ENTRY_RECORDED = 'AuditEntryRecorded';

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
// Bounded so that an id field cannot quietly carry content.
const Id = z.string().min(1).max(256);

export const AuditDecision = z.strictObject({
  effect: z.enum(['allow', 'deny']),
  rule: z.string().min(1).max(256),
});
export type AuditDecision = z.infer<typeof AuditDecision>;

/**
 * Strict: a key added to a stored entry makes it unparseable rather than
 * silently stripped (a stripped key would escape the hash check).
 */
export const AuditEntry = z.strictObject({
  /** Position in the tenant's chain, from 0. */
  seq: z.number().int().min(0),
  tenant: Id,
  /**
   * Who acted: ELMA itself by a fixed name (`system:…`, `elma-…`); a data subject of the tenant by their random
   * pseudonym (`psn_…`), which their erasure forgets; anyone else (staff, services) by their token's `sub`.
   * Entries written before subjects were told apart name every caller by `sub`.
   */
  actor: Id,
  /**
   * The roles the actor acted with (their token's; `system` for ELMA itself), so that the entry can be described
   * without naming the actor (a subject-access export). Absent from entries written before roles were recorded.
   */
  actorRoles: z.array(Id).max(50).optional(),
  /** The data subject, when the operation concerns one. */
  subject: Id.nullable(),
  operation: AuditOperation,
  resourceIds: z.array(Id),
  decision: AuditDecision,
  requestId: Id,
  time: z.iso.datetime({ offset: true }),
  prevHash: Hex64,
  /** sha256 of `canonicalJson` of the entry without `hash`. */
  hash: Hex64,
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/** What the caller states; the chain adds seq, prevHash and hash. */
export const AuditDraft = AuditEntry.omit({ seq: true, prevHash: true, hash: true });
export type AuditDraft = z.infer<typeof AuditDraft>;

/** The newest link of a chain: what the next entry is chained to. */
export interface ChainHead {
  seq: number;
  hash: string;
}

export type ChainBreakReason = 'hash_mismatch' | 'prev_hash_mismatch' | 'seq_gap' | 'unparseable';

/**
 * `checked` counts the entries verified before the break (all of them when ok).
 * `firstBroken.seq` is the chain position where verification failed, which is
 * `checked` for a chain verified from its genesis (the link after `after.seq`
 * plus `checked` for a part of one): for a gap it is the first missing seq.
 */
export type ChainVerification =
  { ok: true; checked: number } | { ok: false; checked: number; firstBroken: { seq: number; reason: ChainBreakReason } };

export type LinkVerification = { ok: true; entry: AuditEntry } | { ok: false; reason: ChainBreakReason };

/**
 * RFC 8785-like canonical JSON: object keys sorted by UTF-16 code units at
 * every level, no whitespace, arrays in order, numbers and strings as
 * ECMAScript serialises them. Properties whose value is undefined are omitted
 * (as JSON does). Anything JSON cannot represent exactly is rejected rather
 * than coerced, because a coerced value would hash the same as a different one.
 */
export function canonicalJson(value: unknown): string {
  return canonical(value, '$', new Set());
}

function canonical(value: unknown, path: string, ancestors: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw notCanonical(path, 'a non-finite number');
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw notCanonical(path, `a ${typeof value}`);
  }
  const object = value as object;
  if (ancestors.has(object)) throw notCanonical(path, 'a cycle');
  ancestors.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object.map((item, i) => canonical(item, `${path}[${i}]`, ancestors)).join(',')}]`;
    }
    const prototype = Object.getPrototypeOf(object);
    if (prototype !== Object.prototype && prototype !== null) throw notCanonical(path, 'a non-plain object');
    const members = Object.keys(object)
      .filter((key) => (object as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((object as Record<string, unknown>)[key], `${path}.${key}`, ancestors)}`);
    return `{${members.join(',')}}`;
  } finally {
    ancestors.delete(object);
  }
}

function notCanonical(path: string, what: string): DomainError {
  // The path names where, never the value: audit input must not leak into errors.
  return new DomainError('AUDIT.NOT_CANONICAL_JSON', `cannot canonicalise ${what} at ${path}`, { path });
}

function hashOf(entry: Omit<AuditEntry, 'hash'>, sha256: Sha256): string {
  return sha256(canonicalJson(entry));
}

/**
 * Links a draft to the chain after `prev` (undefined: the chain is empty).
 * Throws `ValidationFailed` for a malformed draft.
 */
export function chainEntry(draft: AuditDraft, prev: ChainHead | undefined, sha256: Sha256): AuditEntry {
  const body = {
    ...parseOrThrow(AuditDraft, draft),
    seq: prev ? prev.seq + 1 : 0,
    prevHash: prev ? prev.hash : GENESIS_HASH,
  };
  return { ...body, hash: hashOf(body, sha256) };
}

/**
 * Checks one stored item as the link after `prev`. The seq is checked first
 * so a removed entry reads as a gap, then the link to the previous hash, then
 * the entry's own hash (an edited entry).
 */
export function verifyLink(item: unknown, prev: ChainHead | undefined, sha256: Sha256): LinkVerification {
  const parsed = AuditEntry.safeParse(item);
  if (!parsed.success) return { ok: false, reason: 'unparseable' };
  const entry = parsed.data;
  if (entry.seq !== (prev ? prev.seq + 1 : 0)) return { ok: false, reason: 'seq_gap' };
  if (entry.prevHash !== (prev ? prev.hash : GENESIS_HASH)) return { ok: false, reason: 'prev_hash_mismatch' };
  const { hash, ...body } = entry;
  if (hashOf(body, sha256) !== hash) return { ok: false, reason: 'hash_mismatch' };
  return { ok: true, entry };
}

/**
 * Verifies a whole chain from its genesis, in order, stopping at the first broken link; or, given `after`,
 * a consecutive part of one that starts with the link after `after` (an export of a time window: what
 * came before is not at hand, so `after` is taken on trust and only the links from there are checked).
 */
export function verifyChain(entries: Iterable<unknown>, sha256: Sha256, after?: ChainHead): ChainVerification {
  let prev: ChainHead | undefined = after;
  let checked = 0;
  const first = after ? after.seq + 1 : 0;
  for (const item of entries) {
    const link = verifyLink(item, prev, sha256);
    if (!link.ok) return { ok: false, checked, firstBroken: { seq: first + checked, reason: link.reason } };
    prev = link.entry;
    checked += 1;
  }
  return { ok: true, checked };
}

/** Filter of an audit export. `from` is inclusive, `to` exclusive; all given conditions must hold. */
export const AuditFilter = z.strictObject({
  from: z.iso.datetime({ offset: true }).optional(),
  to: z.iso.datetime({ offset: true }).optional(),
  actor: Id.optional(),
  subject: Id.optional(),
  resourceId: Id.optional(),
  operation: AuditOperation.optional(),
});
export type AuditFilter = z.infer<typeof AuditFilter>;

export function matchesAuditFilter(entry: AuditEntry, filter: AuditFilter): boolean {
  // Compared as instants, not strings: offsets and fractional digits vary.
  const time = Date.parse(entry.time);
  if (filter.from !== undefined && time < Date.parse(filter.from)) return false;
  if (filter.to !== undefined && time >= Date.parse(filter.to)) return false;
  if (filter.actor !== undefined && entry.actor !== filter.actor) return false;
  if (filter.subject !== undefined && entry.subject !== filter.subject) return false;
  if (filter.resourceId !== undefined && !entry.resourceIds.includes(filter.resourceId)) return false;
  if (filter.operation !== undefined && entry.operation !== filter.operation) return false;
  return true;
}
