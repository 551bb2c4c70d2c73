import { evolveOffboard, initialOffboardState, OffboardEvent, streams, type EventLog, type OffboardState } from '@elma/domain';
import { randomUUID } from 'node:crypto';

/** One off-boarding's stream, folded: its state and the revision it was read at. */
export interface FoldedOffboarding {
  state: OffboardState;
  revision: bigint;
}

/** Reads and appends `offboarding-{tenant}-{requestId}`; progress is a fold of that stream. */
export class OffboardingStore {
  constructor(private readonly deps: { log: EventLog }) {}

  async read(tenant: string, requestId: string): Promise<FoldedOffboarding> {
    let state = initialOffboardState();
    let revision = -1n;
    for await (const recorded of this.deps.log.readStream(streams.offboarding(tenant, requestId))) {
      const parsed = OffboardEvent.safeParse({ ...(recorded.data as object), type: recorded.type });
      if (parsed.success) state = evolveOffboard(state, parsed.data);
      revision = recorded.revision;
    }
    return { state, revision };
  }

  /** Appends with the expected revision (`-1n`: the stream must not exist). */
  async append(tenant: string, requestId: string, events: OffboardEvent[], expected: bigint | 'any'): Promise<void> {
    await this.deps.log.append(
      streams.offboarding(tenant, requestId),
      events.map(({ type, ...data }) => ({ id: randomUUID(), type, data })),
      { expectedRevision: expected === 'any' ? 'any' : expected < 0n ? 'no_stream' : expected },
    );
  }
}
