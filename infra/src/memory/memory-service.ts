import {
  DomainError,
  MemoryNotFound,
  MemoryRecorded,
  RECALLABLE_STATUSES,
  SENSITIVITY_RANK,
  WriteMemoryRequest,
  WrongExpectedVersion,
  decide,
  episodicIdFor,
  evolve,
  initialMemoryState,
  parseOrThrow,
  streams,
  type Clock,
  type EventLog,
  type IdSource,
  type MemoryIndex,
  type MemoryRecord,
  type Principal,
  PolicyDenied,
  cleanContent,
  evaluate,
  isHeld,
  resourceOf,
  subjectOf,
} from '@elma/domain';
import { deterministicUuid, keyedFingerprint } from '../ingest/ids';
import type { AuditLog } from '../audit/audit-log';
import type { ErasureGuard } from '../erasure/guard';
import type { LegalHolds } from '../legal-hold/legal-holds';
import type { PolicyStore } from '../policy/policy-store';
import { memoryEventMetadata } from '../projection/projection';
import type { ProjectionRunner } from '../projection/runner';
import type { WriteTracker } from '../projection/write-tracker';
import type { EventSealer } from '../sealing/sealed-events';
import { requireCorrector } from './adjudication';

export class UnknownSourceEvent extends DomainError {
  constructor(ids: string[]) {
    super('MEMORY.UNKNOWN_SOURCE_EVENT', `unknown source event ids: ${ids.join(', ')}`, { sourceEventIds: ids });
  }
}

export const EXPLICIT_RULE = 'api.explicit';

/** Explicit memory writes and reads by id. */
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
    },
  ) {}

  async write(principal: Principal, body: unknown, requestId = 'internal'): Promise<{ memory: MemoryRecord; position: string; duplicate: boolean }> {
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
    const sources = await Promise.all(request.sourceEventIds.map((id) => this.deps.index.get(tenant, episodicIdFor(id))));
    const missing = request.sourceEventIds.filter((_, i) => !sources[i]);
    if (missing.length > 0) throw new UnknownSourceEvent(missing);
    const sourceRecords = sources.map((s) => s!.record);

    const now = this.deps.clock.now().toISOString();
    const id = request.idempotencyKey
      ? `mem_${deterministicUuid(tenant, 'memory', request.idempotencyKey)}`
      : `mem_${this.deps.ids.next()}`;
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
        purposes: request.purposes ?? unique(sourceRecords.flatMap((s) => s.policy.purposes)),
        // A derived record is at least as sensitive as its most sensitive source.
        sensitivity: maxSensitivity([request.sensitivity, ...sourceRecords.map((s) => s.policy.sensitivity)]),
      },
      provenance: {
        sourceEventIds: request.sourceEventIds,
        parentIds: sourceRecords.map((s) => s.id),
        rule: EXPLICIT_RULE,
        ruleVersion: '1',
      },
      // Derived confidence never exceeds its weakest input; taint is inherited.
      confidence: Math.min(request.confidence, ...sourceRecords.map((s) => s.confidence)),
      sourceTrust: 'user',
      tainted: sourceRecords.some((s) => s.tainted),
      usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
      version: 1,
      status: 'active',
      retention: { class: request.retention, expiresAt: null },
      ...(request.correction ? { correction: true } : {}),
    };

    await this.deps.erased.refuseErased(tenant, [{ path: 'content', subject: record.subject, content: record.content }]);
    const decision = evaluate(policy, subjectOf(principal), resourceOf(record), { purpose: record.policy.purposes[0], now }, 'write');
    const audit = (effect: 'allow' | 'deny') =>
      this.deps.audit.record({
        tenant,
        actor: principal.sub,
        subject: record.subject,
        operation: 'write',
        resourceIds: [record.id],
        decision: { effect, rule: decision.ruleId },
        requestId,
      });
    if (!decision.allowed) {
      await audit('deny');
      throw new PolicyDenied('write', decision.ruleId);
    }

    const stream = streams.memory(tenant, id);
    let state = initialMemoryState();
    let revision = -1n;
    for await (const event of this.deps.log.readStream(stream)) {
      const [opened] = await this.deps.sealer.open(tenant, [event]);
      state = evolve(state, MemoryRecorded.parse(opened));
      revision = event.revision;
    }
    if (request.expectedVersion !== undefined && BigInt(request.expectedVersion) - 1n !== revision) {
      throw new WrongExpectedVersion(stream, String(request.expectedVersion - 1), revision < 0n ? 'no_stream' : String(revision));
    }
    const events = decide({ type: 'RecordMemory', record }, state);
    if (events.length === 0 && state.status === 'recorded') {
      await audit('allow');
      return { memory: state.record, position: (await this.deps.log.headPosition()).toString(), duplicate: true };
    }
    const sealed = await this.deps.sealer.seal(
      tenant,
      events.map((event) => ({
        id: deterministicUuid('MemoryRecorded', tenant, record.id, String(record.version)),
        type: event.type,
        keyId: record.id,
        data: event,
        metadata: { ...memoryEventMetadata(record), actor: principal.sub },
      })),
    );
    const result = await this.deps.log.append(stream, sealed, { expectedRevision: 'no_stream' });
    this.deps.writes.record(principal, result.position);
    await audit('allow');
    return { memory: record, position: result.position.toString(), duplicate: false };
  }

  /**
   * A record the caller may read under the tenant's policy for one of the
   * token's purposes (or the one asked for), with provenance and status.
   * Otherwise "not found", the same answer as for an id that does not exist,
   * so existence is never revealed. Both outcomes are audited.
   */
  async get(principal: Principal, id: string, options: { purpose?: string; requestId?: string } = {}): Promise<MemoryRecord> {
    const tenant = principal.tenant;
    const found = await this.deps.index.get(tenant, id);
    const policy = await this.deps.policies.get(tenant);
    const now = this.deps.clock.now().toISOString();
    const purposes = options.purpose ? principal.purposes.filter((p) => p === options.purpose) : principal.purposes;
    let rule = 'default-deny';
    let allowed = false;
    if (found && (RECALLABLE_STATUSES.includes(found.record.status) || found.record.status === 'superseded')) {
      const held = !principal.roles.includes('legal') && isHeld(found.record, await this.deps.holds.list(tenant));
      for (const purpose of held ? [] : purposes) {
        const decision = evaluate(policy, subjectOf(principal), resourceOf(found.record), { purpose, now }, 'read');
        if (decision.allowed) {
          allowed = true;
          rule = decision.ruleId;
          break;
        }
      }
      if (held) rule = 'legal-hold';
    }
    await this.deps.audit.record({
      tenant,
      actor: principal.sub,
      subject: allowed ? found!.record.subject : null,
      operation: 'read',
      resourceIds: [id],
      decision: { effect: allowed ? 'allow' : 'deny', rule },
      requestId: options.requestId ?? 'internal',
    });
    if (!allowed) throw new MemoryNotFound(id);
    return found!.record;
  }
}

const unique = <T>(values: T[]) => [...new Set(values)];

function maxSensitivity<T extends keyof typeof SENSITIVITY_RANK>(values: T[]): T {
  return values.reduce((a, b) => (SENSITIVITY_RANK[b] > SENSITIVITY_RANK[a] ? b : a));
}
