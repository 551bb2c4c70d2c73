import { streams, type EventLog } from '@elma/domain';

/**
 * Every stream of the tenant that still has events, and their events' count: what an off-boarding deletes
 * (events, memories, idempotency claims, erasures, legal holds, tombstones, policy, review flags, audit).
 */
export async function tenantStreams(log: EventLog, tenant: string): Promise<{ names: string[]; events: number }> {
  const names = new Set<string>();
  let events = 0;
  const prefixes = ['events', 'memory', 'idempotency', 'erasure', 'legalhold'].map((category) => `${category}-${tenant}-`);
  for await (const event of log.readAll({ filter: { streamNamePrefix: prefixes } })) {
    names.add(event.streamId);
    events++;
  }
  for (const name of [
    streams.tombstones(tenant),
    streams.policy(tenant),
    streams.legalHolds(tenant),
    streams.reviews(tenant),
    streams.audit(tenant),
  ]) {
    let found = 0;
    for await (const _ of log.readStream(name)) found++;
    if (found > 0) names.add(name);
    events += found;
  }
  return { names: [...names].sort(), events };
}
