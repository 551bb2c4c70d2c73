import type { DataKeyOptions, EventData, KeyVault, RecordedEvent } from '@elma/domain';
import { openJson, sealJson, type Sealed } from '@elma/shared';

/**
 * Encrypts the content-bearing field of an event payload under the data key
 * of the record it belongs to, and decrypts it on read. Which field carries
 * content is declared per event type; everything else (ids, times, policy
 * attributes) stays in clear so that the log can be filtered and audited
 * without keys. The AAD binds a ciphertext to its tenant and record, so a
 * ciphertext copied into another record does not open.
 */
export const CONTENT_PATHS: Record<string, readonly string[]> = {
  EventIngested: ['content'],
  MemoryRecorded: ['record', 'content'],
  /** The scope names a data subject; sealed under the request's own key, shredded once the certificate is signed. */
  ErasureRequested: ['scope'],
  /** What verification needs after the purge (texts, terms, vectors), sealed the same way. */
  ErasureWorksetCaptured: ['workset'],
};

/** Event metadata key naming the record whose data key seals the payload. */
export const KEY_ID = 'keyId';

export interface PlainEvent {
  id: string;
  type: string;
  /** The record whose data key encrypts this payload (event id or memory id). */
  keyId: string;
  data: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/** Whether the vault keeps the keys a call loads or creates in its cache (`DataKeyOptions.keep`; default yes). */
export type KeyCaching = Pick<DataKeyOptions, 'keep'>;

export class EventSealer {
  constructor(private readonly vault: KeyVault) {}

  /** Seals a batch in one vault round trip (creating missing data keys). */
  async seal(tenant: string, events: PlainEvent[], caching: KeyCaching = {}): Promise<EventData[]> {
    const keys = await this.vault.dataKeys(tenant, unique(events.map((e) => e.keyId)), { ...caching, create: true });
    return events.map((event) => {
      const path = contentPath(event.type);
      const key = keys.get(event.keyId)!;
      const sealed = sealJson(key, getAt(event.data, path), aad(tenant, event.keyId));
      return {
        id: event.id,
        type: event.type,
        data: setAt(event.data, path, sealed),
        metadata: { ...event.metadata, tenant, [KEY_ID]: event.keyId },
      };
    });
  }

  /** Seals one value as `seal` seals an event's content field (same key, same AAD). */
  async sealValue(tenant: string, keyId: string, value: unknown): Promise<Sealed> {
    const keys = await this.vault.dataKeys(tenant, [keyId], { create: true });
    return sealJson(keys.get(keyId)!, value, aad(tenant, keyId));
  }

  /** Opens one value sealed under `keyId`; throws `KeyShredded` once that key is shredded. */
  async openValue(tenant: string, keyId: string, sealed: Sealed): Promise<unknown> {
    const keys = await this.vault.dataKeys(tenant, [keyId], { create: false });
    return openJson(keys.get(keyId)!, sealed, aad(tenant, keyId));
  }

  /** The key ids among these whose records were erased (data key shredded). */
  erasedAmong(tenant: string, keyIds: string[]): Promise<Set<string>> {
    return this.vault.shreddedAmong(tenant, keyIds);
  }

  /**
   * Opens a batch of recorded events of one tenant. Throws `KeyShredded` for
   * an erased record: callers that replay the log skip those events.
   */
  async open<T = Record<string, unknown>>(tenant: string, events: RecordedEvent[], caching: KeyCaching = {}): Promise<T[]> {
    const keyIds = events.map((e) => keyIdOf(e));
    const keys = await this.vault.dataKeys(tenant, unique(keyIds), { ...caching, create: false });
    return events.map((event, i) => {
      const path = contentPath(event.type);
      const plain = openJson(keys.get(keyIds[i])!, getAt(event.data, path) as Sealed, aad(tenant, keyIds[i]));
      return setAt(event.data as Record<string, unknown>, path, plain) as T;
    });
  }
}

export function keyIdOf(event: RecordedEvent): string {
  const keyId = event.metadata[KEY_ID];
  if (typeof keyId !== 'string') throw new Error(`event ${event.id} carries no key id`);
  return keyId;
}

export function tenantOf(event: RecordedEvent): string {
  const tenant = event.metadata.tenant;
  if (typeof tenant !== 'string') throw new Error(`event ${event.id} carries no tenant`);
  return tenant;
}

function contentPath(type: string): readonly string[] {
  const path = CONTENT_PATHS[type];
  if (!path) throw new Error(`no content path declared for event type ${type}`);
  return path;
}

const aad = (tenant: string, keyId: string) => `${tenant}/${keyId}`;

const unique = (values: string[]) => [...new Set(values)];

function getAt(data: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], data);
}

/** Returns a copy of `data` with the value at `path` replaced; the input is not mutated. */
function setAt(data: Record<string, unknown>, path: readonly string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  return { ...data, [head]: rest.length === 0 ? value : setAt(data[head] as Record<string, unknown>, rest, value) };
}
