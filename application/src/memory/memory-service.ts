import {
  ROLES,
  DomainError,
  MemoryAlreadyRecorded,
  MemoryNotFound,
  MemoryRecorded,
  ProcedureVersionConflict,
  PromoteMemoryRequest,
  RECALLABLE_STATUSES,
  SENSITIVITY_RANK,
  ValidationFailed,
  WriteMemoryRequest,
  WrongExpectedVersion,
  decide,
  decideProcedureVersion,
  episodicIdFor,
  evolve,
  initialMemoryState,
  parseOrThrow,
  procedureKey,
  streams,
  structureIssues,
  workingExpiry,
  type Clock,
  type EventLog,
  type IdSource,
  type MemoryIndex,
  type MemoryRecord,
  type MemoryState,
  type Principal,
  type TenantPolicy,
  PolicyDenied,
  ancestryOf,
  cleanContent,
  earliestExpiry,
  evaluate,
  inheritedInstructionFlag,
  inheritedSources,
  inheritedRestrictions,
  isHeld,
  resourceOf,
  scopeOf,
  subjectOf,
  visibleInSession,
  type LegalHold,
  DEFAULT_LISTED_STATUSES,
  ListPosition,
  MemoryListQuery,
  MemoryVersionsQuery,
  compileRead,
  listPositionOf,
  parseQueryOrThrow,
  type IndexFilter,
  type Page,
} from '@elma/domain';
import { keyedFingerprint, keyedUuid, type PageCursors } from '@elma/shared';
import type { AuditLog } from '../audit/audit-log';
import type { ErasureGuard } from '../erasure/guard';
import type { LegalHolds } from '../governance/legal-holds';
import type { PolicyStore } from '../governance/policy-store';
import { memoryVersionAppends } from './memory-events';
import type { ProjectionRunner } from '../views/runner';
import type { WriteTracker } from '../views/write-tracker';
import type { EventSealer } from '../sealing/sealed-events';
import { requireCorrector } from './adjudication';

export class UnknownSourceEvent extends DomainError {
  constructor(ids: string[]) {
    super('MEMORY.UNKNOWN_SOURCE_EVENT', `unknown source event ids: ${ids.join(', ')}`, { sourceEventIds: ids });
  }
}

export class NotPromotable extends DomainError {
  constructor(id: string, reason: 'not_working' | 'expired') {
    super(
      'MEMORY.NOT_PROMOTABLE',
      `memory ${id} cannot be promoted: ${reason === 'expired' ? 'it has expired' : 'it is not a working memory'}`,
      {
        memoryId: id,
        reason,
      },
    );
  }
}

export const EXPLICIT_RULE = 'api.explicit';
export const PROMOTION_RULE = 'api.promote';

export interface WriteResult {
  memory: MemoryRecord;
  position: string;
  duplicate: boolean;
  /** Ids of the earlier procedure versions this write superseded. */
  superseded?: string[];
}

/** What a read is decided with: the tenant's policy and holds now, the purposes asked, the caller's session. */
interface ReadContext {
  policy: TenantPolicy;
  holds: LegalHold[];
  now: string;
  purposes: string[];
  session?: string;
}

/** Explicit memory writes, promotions of working memories, and reads by id. */
export class MemoryService {
  constructor(
    private readonly deps: {
      log: EventLog;
      index: MemoryIndex;
      sealer: EventSealer;
      clock: Clock;
      ids: IdSource;
      runner: ProjectionRunner;
      writes: WriteTracker;
      policies: PolicyStore;
      holds: LegalHolds;
      audit: AuditLog;
      fingerprintKey: Uint8Array;
      erased: ErasureGuard;
      cursors: PageCursors;
    },
  ) {}

  async write(principal: Principal, body: unknown, requestId = 'internal'): Promise<WriteResult> {
    const parsed = parseOrThrow(WriteMemoryRequest, body);
    const tenant = principal.tenant;
    if (parsed.correction) requireCorrector(principal);
    const policy = await this.deps.policies.get(tenant);
    const cleaned = cleanContent(parsed.content, parsed.sensitivity, '', policy, (secret) =>
      keyedFingerprint(this.deps.fingerprintKey, 'secret', secret),
    );
    const request = { ...parsed, content: cleaned.content, sensitivity: cleaned.sensitivity };
    // Sources must be known: wait for the caller's own writes so a fresh event counts.
    const last = this.deps.writes.lastWrite(principal);
    if (last !== undefined) await this.deps.runner.waitFor(last);
    // A source the caller may not read is answered exactly like one that does not exist.
    const now = this.deps.clock.now().toISOString();
    const holds = await this.deps.holds.list(tenant);
    const sources = await Promise.all(
      request.sourceEventIds.map(async (id) => {
        const found = await this.deps.index.get(tenant, episodicIdFor(id));
        if (!found) return undefined;
        // Citing an event needs leave to read the event: an episode superseded with the fact it stated
        // (episodeFollowingFact) is judged as recorded, so a corrector can still cite the claim it rules on.
        const event = found.record.status === 'superseded' ? { ...found.record, status: 'active' as const } : found.record;
        return this.readable(principal, event, { policy, holds, now, purposes: principal.purposes }).allowed ? found.record : undefined;
      }),
    );
    const missing = request.sourceEventIds.filter((_, i) => !sources[i]);
    if (missing.length > 0) throw new UnknownSourceEvent(missing);
    const sourceRecords = sources.map((s) => s!);

    const procedure = request.content.procedure;
    const id = procedure
      ? this.procedureId(tenant, procedure.name, procedure.version)
      : request.idempotencyKey
        ? // Keyed, and per writer: nobody can compute the id, and another caller's key never collides with this one.
          `mem_${keyedUuid(this.deps.fingerprintKey, tenant, 'memory', principal.sub, request.idempotencyKey)}`
        : `mem_${this.deps.ids.next()}`;
    const working = request.kind === 'working';
    // A memory citing sources is derived from them: it carries every restriction they carry.
    const inherited = inheritedRestrictions(sourceRecords);
    const purposes = request.purposes ? request.purposes.filter((p) => inherited.purposes.includes(p)) : inherited.purposes;
    if (purposes.length === 0) throw new ValidationFailed([{ path: 'purposes', message: 'name purposes that every source allows' }]);
    const record: MemoryRecord = {
      id,
      tenant,
      subject: request.subject ?? sourceRecords[0].subject,
      kind: request.kind,
      content: request.content,
      validFrom: request.validFrom ?? request.content.fact?.validFrom ?? now,
      validTo: request.validTo ?? request.content.fact?.validTo ?? null,
      recordedAt: now,
      policy: {
        owner: request.subject ?? sourceRecords[0].policy.owner,
        roles: [],
        purposes,
        // A derived record is at least as sensitive as its most sensitive source.
        sensitivity: maxSensitivity([request.sensitivity, inherited.sensitivity]),
      },
      provenance: {
        sourceEventIds: request.sourceEventIds,
        parentIds: sourceRecords.map((s) => s.id),
        ancestry: inherited.ancestry,
        rule: EXPLICIT_RULE,
        ruleVersion: '1',
      },
      // Derived confidence never exceeds its weakest input; taint is inherited.
      confidence: Math.min(request.confidence, ...sourceRecords.map((s) => s.confidence)),
      sourceTrust: 'user',
      tainted: sourceRecords.some((s) => s.tainted),
      ...inheritedInstructionFlag(sourceRecords),
      ...inheritedSources(sourceRecords),
      usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
      version: 1,
      status: 'active',
      retention: working
        ? { class: 'session', expiresAt: earliestExpiry(workingExpiry(now, request.ttlSeconds), inherited.ancestry.expiresAt) }
        : { class: request.retention ?? 'standard', expiresAt: inherited.ancestry.expiresAt },
      ...(working ? { session: request.session } : {}),
      ...(request.correction ? { correction: true } : {}),
    };
    return this.store(principal, record, { policy, requestId, expectedVersion: request.expectedVersion });
  }

  /**
   * `POST /v1/memories/:id/promote`: what a working memory holds, kept beyond
   * its session as a new record of another kind (semantic by default) with
   * the same content, citing the working memory as its parent, at no more
   * than its confidence. The working memory itself is left to expire. The
   * caller must be able to read the working memory and to write the new one.
   * Promoting the same memory to the same kind again is a duplicate.
   */
  async promote(principal: Principal, id: string, body: unknown, requestId = 'internal'): Promise<WriteResult> {
    const request = parseOrThrow(PromoteMemoryRequest, body);
    const working = await this.get(principal, id, { requestId, session: request.session });
    if (working.kind !== 'working') throw new NotPromotable(id, 'not_working');
    const now = this.deps.clock.now().toISOString();
    if (working.retention.expiresAt !== null && Date.parse(working.retention.expiresAt) <= Date.parse(now))
      throw new NotPromotable(id, 'expired');
    const issues = structureIssues(request.kind, working.content);
    if (issues.length > 0) throw new ValidationFailed(issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })));

    const tenant = principal.tenant;
    const procedure = working.content.procedure;
    // The promotion outlives the session, not what the working memory was derived from.
    const ancestry = ancestryOf([working]);
    const record: MemoryRecord = {
      id: procedure
        ? this.procedureId(tenant, procedure.name, procedure.version)
        : `mem_${keyedUuid(this.deps.fingerprintKey, tenant, 'promote', id, request.kind)}`,
      tenant,
      subject: working.subject,
      kind: request.kind,
      content: working.content,
      validFrom: working.validFrom,
      validTo: working.validTo,
      recordedAt: now,
      policy: working.policy,
      provenance: {
        sourceEventIds: working.provenance.sourceEventIds,
        parentIds: [working.id],
        ancestry,
        rule: PROMOTION_RULE,
        ruleVersion: '1',
      },
      confidence: Math.min(request.confidence ?? working.confidence, working.confidence),
      sourceTrust: working.sourceTrust,
      tainted: working.tainted,
      ...inheritedInstructionFlag([working]),
      ...inheritedSources([working]),
      usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
      version: 1,
      status: 'active',
      retention: { class: request.retention, expiresAt: ancestry.expiresAt },
    };
    return this.store(principal, record, { policy: await this.deps.policies.get(tenant), requestId });
  }

  /**
   * Records a new memory under the write policy: refuses erased content,
   * decides on the memory's stream (an identical record again is a
   * duplicate), and for a procedure supersedes its earlier versions in the
   * same atomic append, then waits until the index shows the change.
   */
  private async store(
    principal: Principal,
    record: MemoryRecord,
    options: { policy: TenantPolicy; requestId: string; expectedVersion?: number },
  ): Promise<WriteResult> {
    const tenant = principal.tenant;
    const now = record.recordedAt;
    await this.deps.erased.refuseErased(tenant, [{ path: 'content', subject: record.subject, content: record.content }]);
    // An explicit correction is authorised by the corrector roles (checked before: `requireCorrector`), as an
    // adjudication is: a reviewer or DPO, who are no writers under the default policy, may still correct a fact.
    const decision =
      record.correction === true
        ? { allowed: true, ruleId: `role:${ROLES.corrector.join('|')}` }
        : evaluate(options.policy, subjectOf(principal), resourceOf(record), { purpose: record.policy.purposes[0], now }, 'write');
    const audit = (effect: 'allow' | 'deny', resourceIds = [record.id]) =>
      this.deps.audit.record({
        tenant,
        actor: principal,
        subject: record.subject,
        operation: 'write',
        resourceIds,
        decision: { effect, rule: decision.ruleId },
        requestId: options.requestId,
      });
    if (!decision.allowed) {
      await audit('deny');
      throw new PolicyDenied('write', decision.ruleId);
    }

    const procedure = record.kind === 'procedural' ? record.content.procedure : undefined;
    const { revisions, readableBefore } = procedure
      ? await this.procedureRevisions(principal, record, procedure)
      : { revisions: [], readableBefore: new Set<string>() };

    const stream = streams.memory(tenant, record.id);
    const { state, revision } = await this.readMemoryStream(tenant, stream);
    if (options.expectedVersion !== undefined && BigInt(options.expectedVersion) - 1n !== revision) {
      throw new WrongExpectedVersion(stream, String(options.expectedVersion - 1), revision < 0n ? 'no_stream' : String(revision));
    }
    let events: MemoryRecorded[];
    try {
      events = decide({ type: 'RecordMemory', record }, state);
    } catch (error) {
      // A procedure's id is its name and version: another record under it is the same version, told differently.
      if (procedure && error instanceof MemoryAlreadyRecorded) throw new ProcedureVersionConflict(procedure.version, procedure.version);
      throw error;
    }
    if (events.length === 0 && state.status === 'recorded') {
      await audit('allow');
      return { memory: state.record, position: (await this.deps.log.headPosition()).toString(), duplicate: true };
    }
    const records = [record, ...revisions];
    // One atomic append: the new version and the supersession of the old ones are recorded together or not at all.
    const results = await this.deps.log.appendMany(
      await memoryVersionAppends(this.deps.sealer, tenant, records, {
        actor: principal.sub,
        expected: (i) => (i === 0 ? 'no_stream' : 'any'),
      }),
    );
    const position = results.reduce((max, r) => (r.position > max ? r.position : max), -1n);
    this.deps.writes.record(principal, position);
    if (procedure) await this.deps.runner.waitFor(position);
    await audit(
      'allow',
      records.map((r) => r.id),
    );
    const superseded = revisions.map((r) => r.id).filter((id) => readableBefore.has(id));
    return {
      memory: record,
      position: position.toString(),
      duplicate: false,
      ...(superseded.length > 0 ? { superseded } : {}),
    };
  }

  /**
   * The earlier versions a new procedure version supersedes, and those of them the caller may read:
   * the caller is told of those, and of no others.
   */
  private async procedureRevisions(
    principal: Principal,
    record: MemoryRecord,
    procedure: { name: string; version: number },
  ): Promise<{ revisions: MemoryRecord[]; readableBefore: Set<string> }> {
    // Versions are checked against the index: it must hold every version written so far, by anyone.
    await this.deps.runner.waitFor(await this.deps.log.headPosition());
    const current = await this.deps.index.currentFacts(principal.tenant, procedureKey(procedure.name));
    const versions = decideProcedureVersion(record, current, record.recordedAt);
    if (versions.kind === 'conflict') throw new ProcedureVersionConflict(procedure.version, versions.latest.version);
    return { revisions: versions.revisions, readableBefore: new Set((await this.visible(principal, current)).map((r) => r.id)) };
  }

  /** A memory's stream folded into its state, with the revision it was read at (-1 when there is none). */
  private async readMemoryStream(tenant: string, stream: string): Promise<{ state: MemoryState; revision: bigint }> {
    let state = initialMemoryState();
    let revision = -1n;
    for await (const event of this.deps.log.readStream(stream)) {
      const [opened] = await this.deps.sealer.open(tenant, [event]);
      state = evolve(state, MemoryRecorded.parse(opened));
      revision = event.revision;
    }
    return { state, revision };
  }

  /** A procedure version's id: keyed, so the id does not reveal the procedure's name. */
  private procedureId(tenant: string, name: string, version: number): string {
    return `mem_pr_${keyedFingerprint(this.deps.fingerprintKey, 'procedure', tenant, procedureKey(name), String(version)).slice(0, 32)}`;
  }

  /**
   * A record the caller may read under the tenant's policy for one of the
   * token's purposes (or the one asked for), with provenance and status; a
   * working memory only in its session (or by its owner). Otherwise "not
   * found", the same answer as for an id that does not exist, so existence
   * is never revealed. Both outcomes are audited.
   */
  async get(
    principal: Principal,
    id: string,
    options: { purpose?: string; requestId?: string; session?: string } = {},
  ): Promise<MemoryRecord> {
    const tenant = principal.tenant;
    // Read your own writes: a memory written (or an event ingested) just before is found, however slow the index.
    const last = this.deps.writes.lastWrite(principal);
    if (last !== undefined) await this.deps.runner.waitFor(last);
    const found = await this.deps.index.get(tenant, id);
    const purposes = options.purpose ? principal.purposes.filter((p) => p === options.purpose) : principal.purposes;
    const { allowed, rule } = found
      ? this.readable(principal, found.record, {
          policy: await this.deps.policies.get(tenant),
          holds: await this.deps.holds.list(tenant),
          now: this.deps.clock.now().toISOString(),
          purposes,
          session: options.session,
        })
      : { allowed: false, rule: 'default-deny' };
    await this.deps.audit.record({
      tenant,
      actor: principal,
      subject: allowed ? found!.record.subject : null,
      operation: 'read',
      resourceIds: [id],
      decision: { effect: allowed ? 'allow' : 'deny', rule },
      requestId: options.requestId ?? 'internal',
    });
    if (!allowed) throw new MemoryNotFound(id);
    return found!.record;
  }

  /**
   * `GET /v1/memories`: a page of the records the caller may read, first
   * recorded first, under exactly the rules of a read by id (`readable`).
   * Those rules are compiled into the index query (the caller's read policy
   * for each of their purposes, clearance, legal holds, expiry, and working
   * memories only to their owner or in the session named), so a record the
   * caller may not see never takes a place in a page; every record is
   * checked again here all the same, and should one fail, the page is filled
   * from further on. The cursor is bound to the tenant, the caller and the
   * filters. Audited as one read of the ids listed.
   */
  async list(principal: Principal, input: unknown, requestId = 'internal'): Promise<Page<MemoryRecord>> {
    const query = parseQueryOrThrow(MemoryListQuery, input);
    const tenant = principal.tenant;
    const narrowed = scopeOf(query);
    const kinds = query.kinds ?? (query.kind ? [query.kind] : undefined);
    // The cursor is bound to every filter: a cursor of one listing never pages another.
    const scope = [
      'memories',
      tenant,
      principal.sub,
      query.subject ?? '',
      query.kind ?? '',
      query.status ?? '',
      query.purpose ?? '',
      query.session ?? '',
      JSON.stringify([narrowed ?? null, query.kinds ?? null]),
    ];
    const start =
      query.cursor === undefined ? undefined : this.deps.cursors.open(scope, query.cursor, (v) => ListPosition.safeParse(v).data);
    const last = this.deps.writes.lastWrite(principal);
    if (last !== undefined) await this.deps.runner.waitFor(last);
    const context = await this.readContext(principal, query);
    const filter: IndexFilter = {
      statuses: query.status ? [query.status] : DEFAULT_LISTED_STATUSES,
      ...(kinds ? { kinds } : {}),
      // The caller's scope only narrows what the policy admits.
      ...(narrowed ? { scope: narrowed } : {}),
      maxSensitivity: principal.clearance,
      now: context.now,
      // Any one of the caller's purposes admits a record, as for a read by id.
      clauses: context.purposes.flatMap((purpose) => compileRead(context.policy, subjectOf(principal), { purpose, now: context.now })),
      ...(principal.roles.includes(ROLES.legal) ? {} : { exclude: await this.deps.holds.exclusions(tenant) }),
    };
    const items: MemoryRecord[] = [];
    // One record more than the page, to know whether another page follows.
    for (let after = start; items.length <= query.limit;) {
      const wanted = query.limit + 1 - items.length;
      const batch = await this.deps.index.list({
        tenant,
        filter,
        ...(query.subject !== undefined ? { subject: query.subject } : {}),
        working: { owner: principal.sub, ...(query.session !== undefined ? { session: query.session } : {}) },
        ...(after ? { after } : {}),
        limit: wanted,
      });
      items.push(...batch.filter((record) => record.tenant === tenant && this.readable(principal, record, context).allowed));
      if (batch.length < wanted) break;
      after = listPositionOf(batch[batch.length - 1]);
    }
    const page = items.slice(0, query.limit);
    await this.deps.audit.record({
      tenant,
      actor: principal,
      subject: null,
      operation: 'read',
      resourceIds: page.map((r) => r.id),
      decision: { effect: 'allow', rule: 'list' },
      requestId,
    });
    const nextCursor = items.length > query.limit ? this.deps.cursors.seal(scope, listPositionOf(page[page.length - 1])) : null;
    return { items: page, nextCursor };
  }

  /**
   * `GET /v1/memories/{id}/versions`: the versions of a record the caller may
   * read by id (else "not found", as `get` answers), oldest first. Each
   * earlier version is shown only if the caller may read it as it was (its
   * own sensitivity, purposes, owner and status), so a version the caller
   * may not see is left out. Audited as the read by id is.
   */
  async versions(principal: Principal, id: string, input: unknown = {}, requestId = 'internal'): Promise<{ items: MemoryRecord[] }> {
    const query = parseQueryOrThrow(MemoryVersionsQuery, input);
    const current = await this.get(principal, id, { ...query, requestId });
    const tenant = principal.tenant;
    const context = await this.readContext(principal, query);
    const versions = await this.deps.index.versions(tenant, id);
    const items = versions.filter(
      (record) =>
        record.version === current.version || (record.version < current.version && this.readable(principal, record, context).allowed),
    );
    // The current version is the one `get` just returned, should the index have moved on meanwhile.
    return { items: items.map((record) => (record.version === current.version ? current : record)) };
  }

  /** Those of `records` the caller may read, for one of the token's purposes, in order. */
  async visible(principal: Principal, records: MemoryRecord[]): Promise<MemoryRecord[]> {
    const context = await this.readContext(principal, {});
    return records.filter((record) => this.readable(principal, record, context).allowed);
  }

  /** What `readable` decides with: the tenant's policy and holds now, the purposes asked (one, or all the token's). */
  private async readContext(principal: Principal, query: { purpose?: string; session?: string }): Promise<ReadContext> {
    return {
      policy: await this.deps.policies.get(principal.tenant),
      holds: await this.deps.holds.list(principal.tenant),
      now: this.deps.clock.now().toISOString(),
      purposes: query.purpose ? principal.purposes.filter((p) => p === query.purpose) : principal.purposes,
      session: query.session,
    };
  }

  /**
   * Whether the caller may read `record` for one of `purposes`: a current or
   * superseded version, not held (unless the caller is legal), a working
   * memory only in its own session or by its owner, and allowed by the policy.
   */
  private readable(principal: Principal, record: MemoryRecord, context: ReadContext): { allowed: boolean; rule: string } {
    if (!RECALLABLE_STATUSES.includes(record.status) && record.status !== 'superseded') return { allowed: false, rule: 'default-deny' };
    const covered = isHeld(record, context.holds);
    if (!principal.roles.includes(ROLES.legal) && covered) return { allowed: false, rule: 'legal-hold' };
    // An expired record (or one derived from an expired source: it expires with it) is gone, as in recall, unless a hold keeps it.
    const expiresAt = record.retention.expiresAt;
    if (!covered && expiresAt !== null && Date.parse(expiresAt) <= Date.parse(context.now)) return { allowed: false, rule: 'default-deny' };
    if (!visibleInSession(record, context.session) && record.policy.owner !== principal.sub)
      return { allowed: false, rule: 'working-session' };
    for (const purpose of context.purposes) {
      const decision = evaluate(context.policy, subjectOf(principal), resourceOf(record), { purpose, now: context.now }, 'read');
      if (decision.allowed) return { allowed: true, rule: decision.ruleId };
    }
    return { allowed: false, rule: 'default-deny' };
  }
}

function maxSensitivity<T extends keyof typeof SENSITIVITY_RANK>(values: T[]): T {
  return values.reduce((a, b) => (SENSITIVITY_RANK[b] > SENSITIVITY_RANK[a] ? b : a));
}
