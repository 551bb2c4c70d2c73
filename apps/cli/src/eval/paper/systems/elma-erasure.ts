import type { Clock, Principal, Verification } from '@elma/domain';
import type { Elma } from '@elma/runtime';
import { VERIFICATION_ROUNDS } from '@elma/workflows';

/**
 * A subject's erasure as ELMA performs it, in process: the request as the API
 * stores it, then the real steps of `erasureWorkflow` (workflows/src/erasure/workflow.ts)
 * in its order, each called once as its activity would call it: authorize,
 * locate, closure D*(m), legal-hold check, approval, purge index, purge caches,
 * shred keys, delete streams, tombstones, verify (purge again up to
 * VERIFICATION_ROUNDS times), certify; and abandon on failure. What Temporal
 * adds (durability, retries, timers) does not change what is erased, so no
 * server is needed. A closure above the tenant's approval threshold is
 * approved at once by a second DPO (`APPROVER`; ELMA refuses self-approval),
 * as the approval signal would.
 */
/** The second DPO who approves a closure above the threshold. */
export const APPROVER = 'eval-approving-dpo';

export async function eraseSubject(elma: Elma, clock: Clock, requester: Principal, subject: string, requestKey: string): Promise<void> {
  const tenant = requester.tenant;
  const { requestId } = await elma.erasure.requests.request(
    requester,
    { scope: { type: 'subject', subject }, reason: 'subject_request' },
    requestKey,
  );
  const { steps, certification } = elma.erasure;
  const at = { attempt: 1, startedAt: clock.now().toISOString() };
  try {
    const { perRecord, approvalThreshold } = await steps.authorize(tenant, requestId, at);
    const { seeds } = await steps.locate(tenant, requestId, perRecord, at);
    const closure = await steps.closure(tenant, requestId, seeds, at);
    const checked = await steps.legalHoldCheck(tenant, requestId, closure, at);
    const set = { recordIds: checked.recordIds, eventIds: checked.eventIds };
    const required = set.recordIds.length > approvalThreshold;
    const approvedAt = required ? clock.now().toISOString() : null;
    await steps.recordApproval(tenant, requestId, { required, startedAt: at.startedAt, ...(required ? { approvedBy: APPROVER } : {}) }, at);
    let verification: Verification | undefined;
    let streamsDeleted = 0;
    let tombstones = 0;
    for (let round = 1; round <= VERIFICATION_ROUNDS && !verification?.passed; round++) {
      await steps.purgeIndex(tenant, requestId, set, at);
      await steps.purgeCaches(tenant, requestId, set, at);
      await steps.shredKeys(tenant, requestId, set, at);
      streamsDeleted += (await steps.deleteStreams(tenant, requestId, set, at)).deleted;
      if (round === 1) tombstones = (await steps.writeTombstones(tenant, requestId, set, at)).tombstones;
      verification = await steps.verify(tenant, requestId, set, round, at);
    }
    if (!verification?.passed) throw new Error(`erasure verification failed after ${VERIFICATION_ROUNDS} purge rounds`);
    await certification.certify(
      tenant,
      requestId,
      {
        set,
        held: checked.held,
        verification,
        approvedBy: required ? APPROVER : null,
        approvedAt,
        streamsDeleted,
        tombstones,
      },
      at,
    );
  } catch (error) {
    // As the workflow does: no certificate will come, so the request's workset must not outlive it.
    await certification.abandon(tenant, requestId, (error as { code?: string }).code ?? 'ERASURE.FAILED').catch(() => undefined);
    throw error;
  }
}
