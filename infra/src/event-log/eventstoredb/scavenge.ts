import { BACKWARDS, END } from '@eventstore/db-client';
import type { LogCompaction, LogCompactionReport } from '@elma/domain';
import type { EventStoreDbEventLog } from './eventstoredb-event-log';

/** What the $scavenges stream says about one scavenge, read from its `$scavengeStarted`/`$scavengeCompleted` events. */
export interface ScavengeEvent {
  type: string;
  created: Date;
  data: { scavengeId?: string; result?: string; error?: string | null };
}

/**
 * The scavenge that bears on deletions made at `since`: the first one started
 * at or after it, and whether it completed successfully. Pure, so it is tested
 * without a server. `events` may come in any order.
 */
export function scavengeOutcome(events: ScavengeEvent[], since: Date): LogCompactionReport {
  const started = events
    .filter((e) => e.type === '$scavengeStarted' && e.created.getTime() >= since.getTime() && e.data.scavengeId)
    .sort((a, b) => a.created.getTime() - b.created.getTime());
  for (const start of started) {
    const done = events.find((e) => e.type === '$scavengeCompleted' && e.data.scavengeId === start.data.scavengeId);
    if (!done)
      return {
        engine: 'eventstoredb',
        method: 'scavenge',
        requested: true,
        completed: false,
        id: start.data.scavengeId,
        result: 'running',
      };
    const result = done.data.result ?? 'unknown';
    if (result === 'Success')
      return { engine: 'eventstoredb', method: 'scavenge', requested: true, completed: true, id: start.data.scavengeId, result };
  }
  const last = started.at(-1);
  return {
    engine: 'eventstoredb',
    method: 'scavenge',
    requested: started.length > 0,
    completed: false,
    ...(last
      ? {
          id: last.data.scavengeId,
          result: String(
            events.find((e) => e.type === '$scavengeCompleted' && e.data.scavengeId === last.data.scavengeId)?.data.result ?? 'unknown',
          ),
        }
      : { result: 'not started' }),
  };
}

/** The node's HTTP base URL (admin API) from an `esdb://` connection string; same host and port as gRPC. */
export function adminBaseUrl(connectionString: string): { base: string; authorization?: string } {
  const match = /^esdb(?:\+discover)?:\/\/(?:([^:@/]+):([^@/]*)@)?([^/?,]+)/.exec(connectionString);
  if (!match) throw new Error('not an esdb:// connection string');
  const [, user, password, host] = match;
  const tls = !/[?&]tls=false(?:&|$)/i.test(connectionString);
  return {
    base: `${tls ? 'https' : 'http'}://${host}`,
    ...(user
      ? { authorization: `Basic ${Buffer.from(`${decodeURIComponent(user)}:${decodeURIComponent(password ?? '')}`).toString('base64')}` }
      : {}),
  };
}

/**
 * EventStoreDB removes tombstoned streams' events from its files only when a
 * scavenge runs. Erasure requests one through the admin API after deleting
 * streams, and verification reads the $scavenges stream to state whether it
 * completed. Needs the admin role when the server runs with security on.
 */
export class EventStoreDbScavenger implements LogCompaction {
  constructor(private readonly log: EventStoreDbEventLog) {}

  async request(): Promise<void> {
    const { base, authorization } = adminBaseUrl(this.log.options.url);
    const response = await fetch(`${base}/admin/scavenge`, {
      method: 'POST',
      headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) },
      signal: AbortSignal.timeout(10_000),
    });
    // 400 with a running scavenge is fine: that scavenge covers these deletions only if it started after them,
    // which `report` checks.
    if (!response.ok && response.status !== 400) throw new Error(`EventStoreDB scavenge request failed with HTTP ${response.status}`);
  }

  async report(since: Date): Promise<LogCompactionReport> {
    const events: ScavengeEvent[] = [];
    try {
      for await (const resolved of this.log.client.readStream('$scavenges', { direction: BACKWARDS, fromRevision: END, maxCount: 200 })) {
        const event = resolved.event;
        if (!event) continue;
        events.push({
          type: event.type,
          created: new Date(event.created),
          data: (event.isJson ? event.data : {}) as ScavengeEvent['data'],
        });
        if (event.type === '$scavengeStarted' && new Date(event.created).getTime() < since.getTime()) break;
      }
    } catch (error) {
      const type = (error as { type?: string }).type;
      if (type !== 'stream-not-found') throw error;
    }
    return scavengeOutcome(events, since);
  }
}
