import {
  ROLES,
  DomainError,
  conflictsWith,
  factKey,
  parseOrThrow,
  type Clock,
  type EventLog,
  type MemoryIndex,
  type MemoryRecord,
  type Principal,
} from '@elma/domain';
import { z } from 'zod';
import type { AuditLog } from '../audit/audit-log';
import { Forbidden } from '../governance/governance-service';
import { memoryVersionAppends } from './memory-events';
import type { ProjectionRunner } from '../views/runner';
import type { WriteTracker } from '../views/write-tracker';
import type { EventSealer } from '../sealing/sealed-events';
import type { MemoryService } from './memory-service';

/** Who may correct facts or settle disputes (an explicit correction by an authorised subject: paper, section 5.2 'Consolidation', rule 4). */
export const CORRECTOR_ROLES = ROLES.corrector;

export const AdjudicateRequest = z.strictObject({
  /** `accept`: this record holds and what it contradicts is superseded; `reject`: this record is superseded. */
  decision: z.enum(['accept', 'reject']),
});

export class NotAFact extends DomainError {
  constructor(id: string) {
    super('MEMORY.NOT_A_FACT', `memory ${id} states no fact to adjudicate`, { memoryId: id });
  }
}

export function requireCorrector(principal: Principal): void {
  if (!principal.roles.some((r) => (CORRECTOR_ROLES as readonly string[]).includes(r))) throw new Forbidden(CORRECTOR_ROLES.join('|'));
}

/**
 * `POST /v1/memories/:id/adjudicate`: a person's decision on a disputed (or
 * any contradicted) fact, recorded as new versions of the records it
 * settles, in their memory streams; nothing is overwritten, and `knownAsOf`
 * queries still see the dispute as it stood before.
 */
export class Adjudication {
  constructor(
    private readonly deps: {
      log: EventLog;
      index: MemoryIndex;
      sealer: EventSealer;
      clock: Clock;
      runner: ProjectionRunner;
      writes: WriteTracker;
      audit: AuditLog;
      /** Reads under the caller's policy: a record the caller may not read is settled as if it did not exist. */
      reads: Pick<MemoryService, 'get' | 'visible'>;
    },
  ) {}

  async adjudicate(
    principal: Principal,
    id: string,
    body: unknown,
    requestId = 'internal',
  ): Promise<{ memory: MemoryRecord; revised: MemoryRecord[] }> {
    const tenant = principal.tenant;
    const audit = (effect: 'allow' | 'deny', resourceIds: string[]) =>
      this.deps.audit.record({
        tenant,
        actor: principal,
        subject: null,
        operation: 'write',
        resourceIds,
        decision: { effect, rule: 'adjudication' },
        requestId,
      });
    try {
      requireCorrector(principal);
    } catch (error) {
      await audit('deny', [id]);
      throw error;
    }
    const { decision } = parseOrThrow(AdjudicateRequest, body);
    const found = await this.deps.reads.get(principal, id, { requestId });
    if (!found.content.fact) throw new NotAFact(id);
    const at = this.deps.clock.now().toISOString();
    // A decision settles only what its maker can see; a contradiction hidden from them stays as it is.
    const current = await this.deps.reads.visible(principal, await this.deps.index.currentFacts(tenant, factKey(found.content.fact)));
    const contradicting = current.filter((other) => other.id !== id && (conflictsWith(found, other) || conflictsWith(other, found)));
    const revise = (record: MemoryRecord, status: MemoryRecord['status'], against: string[]): MemoryRecord => ({
      ...record,
      status,
      version: record.version + 1,
      revisedAt: at,
      ...(status === 'active' ? { correction: true } : {}),
      resolution: { rule: 'adjudication', against, decidedAt: at, by: principal.sub },
    });
    const revised: MemoryRecord[] =
      decision === 'accept'
        ? [
            revise(
              found,
              'active',
              contradicting.map((o) => o.id),
            ),
            ...contradicting.map((o) => revise(o, 'superseded', [id])),
          ]
        : [
            revise(
              found,
              'superseded',
              contradicting.map((o) => o.id),
            ),
            // A record disputed only against the rejected one holds again.
            ...contradicting
              .filter((o) => o.status === 'disputed' && !current.some((c) => c.id !== id && c.id !== o.id && conflictsWith(o, c)))
              .map((o) => revise(o, 'active', [id])),
          ];
    const results = await this.deps.log.appendMany(await memoryVersionAppends(this.deps.sealer, tenant, revised, { actor: principal.sub }));
    const position = results.reduce((max, r) => (r.position > max ? r.position : max), -1n);
    this.deps.writes.record(principal, position);
    await this.deps.runner.waitFor(position);
    await audit(
      'allow',
      revised.map((r) => r.id),
    );
    return { memory: revised[0], revised };
  }
}
