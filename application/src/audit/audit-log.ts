import { createHash } from 'node:crypto';
import { DomainError, WrongExpectedVersion, parseOrThrow, type Clock, type EventData, type EventLog, type KeyVault } from '@elma/domain';
import {
  AUDIT_ENTRY_RECORDED,
  AuditDraft,
  AuditEntry,
  AuditFilter,
  auditStream,
  chainEntry,
  matchesAuditFilter,
  verifyLink,
  type ChainBreakReason,
  type ChainHead,
  type ChainVerification,
} from '@elma/domain';
import { deterministicUuid } from '@elma/shared';
import { recordedActor, recordedName, type AuditActor } from './audit-actor';

/** What a caller records; the log names the actor (see `recordedName`), stamps time and chains it. */
export type RecordAuditEntry = Omit<AuditDraft, 'time' | 'actor' | 'actorRoles'> & { actor: AuditActor };

export interface AuditLogDeps {
  log: EventLog;
  clock: Clock;
  /**
   * Replaces a data subject's id by a keyed fingerprint before it enters the
   * chain, which erasure cannot rewrite: the trail can still be searched by
   * subject (the filter is fingerprinted the same way), but a person's id
   * never outlives their erasure in it.
   */
  pseudonymize?: (tenant: string, subject: string) => string;
  /**
   * The key vault's subject pseudonyms: a caller who is a data subject of the tenant is recorded by theirs
   * (`recordedName`; made at once for a token without built-in roles, `actsAsSubject`), which their erasure
   * forgets. Absent (tests of other parts), callers are recorded by `sub`.
   */
  subjects?: Pick<KeyVault, 'subjectPseudonyms'>;
  /**
   * Evaluation only, the ablation without a governance plane (docs/evaluation-method.md): every entry is
   * checked and returned as the first of an empty chain, and none is stored. `openElma` takes it as an
   * evaluation option; never set for a deployment.
   */
  discard?: boolean;
  /** Told each stored batch: how long its append took (retries included) and how many entries it held. Ids-free by construction. */
  appended?: (seconds: number, entries: number) => void;
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

// Bounds one append transaction; a longer queue simply takes several.
const MAX_BATCH = 1_000;
// Each retry follows another writer's successful append, so running out means sustained contention.
const MAX_ATTEMPTS = 50;

/** The stored head of a tenant's chain; null while the stream is empty. */
type Head = (ChainHead & { revision: bigint }) | null;

interface Pending {
  /** Checked when recorded; the actor's name may still be looked up (the order of the queue is the call order). */
  draft: Promise<AuditDraft>;
  resolve(entry: AuditEntry): void;
  reject(error: unknown): void;
}

type Named = Omit<Pending, 'draft'> & { draft: AuditDraft };

interface TenantChain {
  /** undefined: not known (never loaded, or invalidated by a failed append). */
  head: Head | undefined;
  queue: Pending[];
  draining: boolean;
}

/**
 * The tenant's audit trail in the event log (`audit-{tenant}`, one
 * `AuditEntryRecorded` per entry). Appends use the exact expected revision,
 * so the stream is one linear chain even with several writers.
 *
 * Group commit: records made while an append is in flight wait in the
 * tenant's queue and go out together in the next single append, chained in
 * call order. A record's promise resolves once its entry is durable.
 */
export class AuditLog {
  private readonly chains = new Map<string, TenantChain>();

  constructor(private readonly deps: AuditLogDeps) {}

  /**
   * Appends one entry to the tenant's chain and resolves with it once stored.
   * A caller is named as `recordedName` says (a data subject by their random
   * pseudonym), with their roles; ELMA's own name with the role `system`.
   * A malformed request rejects alone (ValidationFailed) and never joins a batch.
   */
  record(request: RecordAuditEntry): Promise<AuditEntry> {
    let checked: AuditDraft;
    try {
      const subject =
        request.subject === null || !this.deps.pseudonymize ? request.subject : this.deps.pseudonymize(request.tenant, request.subject);
      const actor = typeof request.actor === 'string' ? request.actor : request.actor.sub;
      checked = parseOrThrow(AuditDraft, { ...request, actor, subject, time: this.deps.clock.now().toISOString() });
    } catch (error) {
      return Promise.reject(error);
    }
    const draft = recordedActor(this.deps.subjects, checked.tenant, request.actor).then((named) =>
      parseOrThrow(AuditDraft, { ...checked, ...named }),
    );
    if (this.deps.discard) return draft.then((d) => chainEntry(d, undefined, sha256Hex));
    // Awaited by the drain; until then a failed look-up must not count as unhandled.
    draft.catch(() => undefined);
    const chain = this.chainOf(checked.tenant);
    return new Promise<AuditEntry>((resolve, reject) => {
      chain.queue.push({ draft, resolve, reject });
      if (!chain.draining) {
        chain.draining = true;
        // Start after the current task so that records made in the same tick share the first append.
        queueMicrotask(() => void this.drain(checked.tenant, chain));
      }
    });
  }

  /**
   * The tenant's entries in chain order that match every given condition
   * (`from` inclusive, `to` exclusive). Throws `AUDIT.ENTRY_UNPARSEABLE` on a
   * stored entry that no longer parses: an export must not skip silently.
   */
  async *export(tenant: string, filter: AuditFilter = {}): AsyncIterable<AuditEntry> {
    const parsed = parseOrThrow(AuditFilter, filter);
    const { actor, ...criteria } =
      parsed.subject !== undefined && this.deps.pseudonymize
        ? { ...parsed, subject: this.deps.pseudonymize(tenant, parsed.subject) }
        : parsed;
    // A data subject's own actions are recorded by their pseudonym while they have one, by their id before that.
    const actors =
      actor === undefined
        ? undefined
        : new Set([actor, this.deps.subjects ? await recordedName(this.deps.subjects, tenant, actor) : actor]);
    for await (const event of this.deps.log.readStream(auditStream(tenant))) {
      const parsed = AuditEntry.safeParse(event.data);
      if (!parsed.success) {
        throw new DomainError('AUDIT.ENTRY_UNPARSEABLE', `audit entry at revision ${event.revision} of tenant ${tenant} does not parse`, {
          tenant,
          revision: String(event.revision),
        });
      }
      if (matchesAuditFilter(parsed.data, criteria) && (!actors || actors.has(parsed.data.actor))) yield parsed.data;
    }
  }

  /**
   * Verifies the tenant's whole chain from its genesis, streaming. The stream
   * revision must equal the entry's seq (the log only ever appends at
   * `seq == revision`), so a deleted row is a gap even next to an unparseable one.
   */
  async verify(tenant: string): Promise<ChainVerification> {
    let prev: ChainHead | undefined;
    let checked = 0;
    for await (const event of this.deps.log.readStream(auditStream(tenant))) {
      const broken = (reason: ChainBreakReason): ChainVerification => ({ ok: false, checked, firstBroken: { seq: checked, reason } });
      if (event.revision !== BigInt(checked)) return broken('seq_gap');
      const link = verifyLink(event.data, prev, sha256Hex);
      if (!link.ok) return broken(link.reason);
      prev = link.entry;
      checked += 1;
    }
    return { ok: true, checked };
  }

  private chainOf(tenant: string): TenantChain {
    let chain = this.chains.get(tenant);
    if (!chain) {
      chain = { head: undefined, queue: [], draining: false };
      this.chains.set(tenant, chain);
    }
    return chain;
  }

  /** One drain loop per tenant: batches never overlap, so the cached head is only touched here. */
  private async drain(tenant: string, chain: TenantChain): Promise<void> {
    try {
      while (chain.queue.length > 0) {
        const batch = await this.named(chain.queue.splice(0, MAX_BATCH));
        if (batch.length === 0) continue;
        try {
          const started = performance.now();
          const entries = await this.appendBatch(tenant, chain, batch);
          this.deps.appended?.((performance.now() - started) / 1000, entries.length);
          batch.forEach((pending, i) => pending.resolve(entries[i]));
        } catch (error) {
          batch.forEach((pending) => pending.reject(error));
        }
      }
    } finally {
      chain.draining = false;
    }
  }

  /** The batch with each actor named, in call order; a record whose look-up failed is rejected alone. */
  private async named(pending: Pending[]): Promise<Named[]> {
    const drafts = await Promise.allSettled(pending.map((p) => p.draft));
    return pending.flatMap((p, i) => {
      const settled = drafts[i];
      if (settled.status === 'fulfilled') return [{ ...p, draft: settled.value }];
      p.reject(settled.reason);
      return [];
    });
  }

  private async appendBatch(tenant: string, chain: TenantChain, batch: Named[]): Promise<AuditEntry[]> {
    const stream = auditStream(tenant);
    for (let attempt = 1; ; attempt++) {
      const head = chain.head === undefined ? await this.loadHead(tenant) : chain.head;
      // Re-chained on every attempt: after a conflict the batch follows the other writer's entries.
      const entries: AuditEntry[] = [];
      for (const pending of batch) entries.push(chainEntry(pending.draft, entries.at(-1) ?? head ?? undefined, sha256Hex));
      const events: EventData[] = entries.map((entry) => ({
        // The hash is part of the id: a retry of the same entry is an idempotent no-op, while a
        // different entry at the same seq (another writer's) gets a different id and hits the
        // revision check. With (tenant, seq) alone the log would take the other writer's event
        // as our retry: our entry lost, or our tail appended after entries it does not chain to.
        id: deterministicUuid('audit', tenant, String(entry.seq), entry.hash),
        type: AUDIT_ENTRY_RECORDED,
        data: entry,
      }));
      try {
        const result = await this.deps.log.append(stream, events, {
          expectedRevision: head ? head.revision : 'no_stream',
        });
        const last = entries[entries.length - 1];
        chain.head = { revision: result.nextExpectedRevision, seq: last.seq, hash: last.hash };
        return entries;
      } catch (error) {
        // Whatever failed, the stored head is no longer known for sure.
        chain.head = undefined;
        if (!(error instanceof WrongExpectedVersion) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  private async loadHead(tenant: string): Promise<Head> {
    for await (const event of this.deps.log.readStream(auditStream(tenant), { direction: 'backwards', maxCount: 1 })) {
      const parsed = AuditEntry.safeParse(event.data);
      // Fail closed: chaining onto an entry we cannot read would hide the damage behind a valid-looking tail.
      if (!parsed.success) {
        throw new DomainError('AUDIT.CHAIN_HEAD_UNREADABLE', `the newest audit entry of tenant ${tenant} does not parse`, {
          tenant,
          revision: String(event.revision),
        });
      }
      return { revision: event.revision, seq: parsed.data.seq, hash: parsed.data.hash };
    }
    return null;
  }
}
