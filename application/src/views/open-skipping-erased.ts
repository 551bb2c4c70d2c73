import { KeyShredded, type RecordedEvent } from '@elma/domain';
import type { EventSealer, KeyCaching } from '../sealing/sealed-events';

/** Opens events; an erased one (shredded key) is skipped, not an error: what it held must never come back. */
export async function openSkippingErased<T>(
  sealer: EventSealer,
  tenant: string,
  events: RecordedEvent[],
  caching: KeyCaching = {},
): Promise<T[]> {
  if (events.length === 0) return [];
  try {
    return await sealer.open<T>(tenant, events, caching);
  } catch (error) {
    if (!(error instanceof KeyShredded)) throw error;
    const opened: T[] = [];
    for (const event of events) {
      try {
        opened.push(...(await sealer.open<T>(tenant, [event], caching)));
      } catch (inner) {
        if (!(inner instanceof KeyShredded)) throw inner;
      }
    }
    return opened;
  }
}
