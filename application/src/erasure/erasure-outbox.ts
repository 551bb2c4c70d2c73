import {
  decideErasureOutbox,
  erasureOutboxDecider,
  type ErasureOutboxCommand,
  type ErasureStart,
  streams,
  type EventLog,
} from '@elma/domain';
import { deterministicUuid } from '@elma/shared';
import { foldStream } from '../command/handle-command';

export type { ErasureStart } from '@elma/domain';

/** Outside every tenant (see `streams.erasureOutbox`). */
export const ERASURE_OUTBOX_STREAM = streams.erasureOutbox;

/**
 * The erasure requests whose workflow has not been seen started. An entry is
 * queued before the request is stored and closed once Temporal has the
 * workflow, so a request that is stored while Temporal is unreachable, or
 * whose process dies before the start, is found and started later (`elma
 * start` drains it) instead of staying stored without a workflow. Entries
 * carry ids only; event ids are deterministic, so repeats write nothing.
 * Nothing decided here depends on the stream's state, and the stream is
 * shared by every tenant and grows with every erasure: commands append
 * without reading it (expected revision `any`); only `pending` folds it.
 */
export class ErasureOutbox {
  constructor(private readonly deps: { log: EventLog }) {}

  async queue(entry: ErasureStart): Promise<void> {
    await this.append({ type: 'QueueStart', entry }, deterministicUuid('erasure-outbox-queued', entry.tenant, entry.requestId));
  }

  async started(tenant: string, requestId: string): Promise<void> {
    await this.append({ type: 'MarkStarted', tenant, requestId }, deterministicUuid('erasure-outbox-started', tenant, requestId));
  }

  /** Queued and not yet started, oldest first. */
  async pending(): Promise<ErasureStart[]> {
    return [...(await foldStream(this.deps.log, ERASURE_OUTBOX_STREAM, erasureOutboxDecider)).state.pending.values()];
  }

  private async append(command: ErasureOutboxCommand, id: string): Promise<void> {
    const events = decideErasureOutbox(command).map((event) => ({ id, type: event.type, data: event.data, metadata: {} }));
    await this.deps.log.append(ERASURE_OUTBOX_STREAM, events, { expectedRevision: 'any' });
  }
}
