import { ApplicationFailure, CancellationScope, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { SubjectAccessActivities } from '@elma/activities';
import { TENANT_ID_PATTERN } from '../reindex/messages';
import { ACTIVITY_RETRY, HEARTBEAT_TIMEOUT } from '../retry';
import { ElmaStatus } from '../search-attributes';
import {
  SUBJECT_ACCESS_FAILURES,
  SUBJECT_ACCESS_REQUEST_ID_PATTERN,
  SUBJECT_PSEUDONYM_PATTERN,
  type SubjectAccessInput,
  type SubjectAccessResult,
} from './messages';

const activities = proxyActivities<SubjectAccessActivities>({
  // A subject with thousands of records and a long audit trail takes seconds; the timeout bounds a stuck attempt.
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: ACTIVITY_RETRY,
});

/**
 * SubjectAccessWorkflow (GDPR Art. 15/20): produce the export (assemble,
 * render, sign, store sealed), then keep it until its expiry and delete it.
 * An erasure of the subject may delete it before; the expiry step then has
 * nothing to do. A request that fails ends with its sealed subject shredded.
 * Input, result and history carry ids, pseudonyms, counts and hashes only.
 */
export async function subjectAccessWorkflow(input: SubjectAccessInput): Promise<SubjectAccessResult> {
  const { tenant, requestId, subjectPseudonym } = input;
  if (
    !TENANT_ID_PATTERN.test(String(tenant)) ||
    !SUBJECT_ACCESS_REQUEST_ID_PATTERN.test(String(requestId)) ||
    !SUBJECT_PSEUDONYM_PATTERN.test(String(subjectPseudonym))
  ) {
    throw ApplicationFailure.create({ type: SUBJECT_ACCESS_FAILURES.invalidInput, message: 'malformed request', nonRetryable: true });
  }
  let produced;
  try {
    produced = await activities.subjectAccessProduce(tenant, requestId);
  } catch (error) {
    const failure = error as { cause?: { type?: string }; type?: string };
    const code = failure.cause?.type ?? failure.type ?? 'SUBJECT_ACCESS.FAILED';
    upsertSearchAttributes([{ key: ElmaStatus, value: 'failed' }]);
    await CancellationScope.nonCancellable(() => activities.subjectAccessFail(tenant, requestId, code)).catch(() => undefined);
    throw error;
  }
  upsertSearchAttributes([{ key: ElmaStatus, value: 'completed' }]);
  // A second past the expiry, so the activity's clock agrees it has come.
  const wait = Date.parse(produced.expiresAt) - Date.now() + 1_000;
  if (wait > 0) await sleep(wait);
  const { deleted } = await activities.subjectAccessExpire(tenant, requestId);
  upsertSearchAttributes([{ key: ElmaStatus, value: 'expired' }]);
  return { requestId, ...produced, expiredByWorkflow: deleted };
}
