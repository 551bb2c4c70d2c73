import { ErasureReason, streams, type EventLog } from '@elma/domain';
import { deterministicUuid } from '../ingest/ids';

/** One erasure whose workflow must be started: ids and the reason only (the scope stays sealed in its stream). */
export interface ErasureStart {
  tenant: string;
  requestId: string;
  reason: ErasureReason;
}

/** Outside every tenant (see `streams.erasureOutbox`). */
export const ERASURE_OUTBOX_STREAM = streams.erasureOutbox;

const TYPES = { queued: 'ErasureStartQueued', started: 'ErasureStarted' } as const;

/**
 * The erasure requests whose workflow has not been seen started. An entry is
 * queued before the request is stored and closed once Temporal has the
 * workflow, so a request that is stored while Temporal is unreachable, or
 * whose process dies before the start, is found and started later (`elma
 * start` drains it) instead of staying stored without a workflow. Entries
 * carry ids only; event ids are deterministic, so repeats write nothing.
 */
export class ErasureOutbox {
  constructor(private readonly deps: { log: EventLog }) {}

  async queue(entry: ErasureStart): Promise<void> {
    await this.deps.log.append(
      ERASURE_OUTBOX_STREAM,
      [{ id: deterministicUuid('erasure-outbox-queued', entry.tenant, entry.requestId), type: TYPES.queued, data: { ...entry }, metadata: {} }],
      { expectedRevision: 'any' },
    );
  }

  async started(tenant: string, requestId: string): Promise<void> {
    await this.deps.log.append(
      ERASURE_OUTBOX_STREAM,
      [{ id: deterministicUuid('erasure-outbox-started', tenant, requestId), type: TYPES.started, data: { tenant, requestId }, metadata: {} }],
      { expectedRevision: 'any' },
    );
  }

  /** Queued and not yet started, oldest first. */
  async pending(): Promise<ErasureStart[]> {
    const open = new Map<string, ErasureStart>();
    for await (const event of this.deps.log.readStream(ERASURE_OUTBOX_STREAM)) {
      const data = event.data as Partial<ErasureStart>;
      const key = `${data.tenant}/${data.requestId}`;
      if (event.type === TYPES.queued) {
        const reason = ErasureReason.safeParse(data.reason);
        if (typeof data.tenant === 'string' && typeof data.requestId === 'string' && reason.success) {
          open.set(key, { tenant: data.tenant, requestId: data.requestId, reason: reason.data });
        }
      } else if (event.type === TYPES.started) open.delete(key);
    }
    return [...open.values()];
  }
}
