import { streams, type EventLog, type MemoryIndex, type RecordedEvent } from '@elma/domain';
import type { Projection } from './projection';

const PAGE = 1000;

/**
 * A tenant's views as a whole: dropped and rebuilt from the log by the
 * ReindexWorkflow. The rebuild reads the log only; it uses the same
 * `Projection.apply` as the live runner, so a rebuilt view answers queries
 * exactly as the live one did.
 */
export class TenantViewsService {
  constructor(private readonly deps: { log: EventLog; index: MemoryIndex; projection: Projection }) {}

  async drop(tenant: string): Promise<number> {
    const count = await this.deps.index.count(tenant);
    await this.deps.index.dropTenant(tenant);
    this.deps.projection.forgetTenant(tenant);
    return count;
  }

  async replay(tenant: string): Promise<{ events: number; memories: number }> {
    let events = 0;
    let page: RecordedEvent[] = [];
    const flush = async () => {
      if (page.length === 0) return;
      await this.deps.projection.apply(page, { appendDerived: false });
      events += page.length;
      page = [];
    };
    for await (const event of this.deps.log.readAll({
      filter: { streamNamePrefix: [streams.eventsOfTenant(tenant), streams.memoriesOfTenant(tenant)] },
    })) {
      page.push(event);
      if (page.length >= PAGE) await flush();
    }
    await flush();
    return { events, memories: await this.deps.index.count(tenant) };
  }
}
