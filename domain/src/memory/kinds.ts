import { DomainError } from '../shared/errors';
import { factKey } from './conflicts';
import { EntityType, type EntityRef, type MemoryRecord, type MemoryStatus } from './record';

/**
 * The five kinds, beyond their text (paper, section 3.2 'Formal definition of memory'): working memories live in
 * one session for a short while, procedures have versions, relations are
 * edges between entities. Pure rules; the services apply them.
 */

const normalise = (text: string) => text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim();

export const WORKING_TTL_DEFAULT_SECONDS = 3_600;
export const WORKING_TTL_MAX_SECONDS = 7 * 86_400;

/** When a working memory recorded at `at` stops being recalled. */
export function workingExpiry(at: string, ttlSeconds: number = WORKING_TTL_DEFAULT_SECONDS): string {
  return new Date(Date.parse(at) + ttlSeconds * 1_000).toISOString();
}

/**
 * Whether recall for `session` (undefined: a request naming none) may return
 * the record. A working memory stays in its own session; every other kind is
 * shared across sessions.
 */
export function visibleInSession(record: Pick<MemoryRecord, 'kind' | 'session'>, session: string | undefined): boolean {
  return record.kind !== 'working' || (session !== undefined && record.session === session);
}

/**
 * A procedure's identity across its versions: its name, normalised. Names hold
 * no control characters, so a procedure key never contains the unit separator
 * of a `factKey` and the two can share one index column.
 */
export const procedureKey = (name: string): string => `procedure\u001e${normalise(name)}`;

/**
 * The key under which the index files a record for `currentFacts`: a
 * procedure's name for a procedural memory, else its fact's entity and
 * attribute; null when it has neither.
 */
export function indexKeyOf(record: Pick<MemoryRecord, 'kind' | 'content'>): string | null {
  const { procedure, fact } = record.content;
  if (record.kind === 'procedural' && procedure) return procedureKey(procedure.name);
  return fact ? factKey(fact) : null;
}

/**
 * A procedure version at or below one already recorded. It names versions,
 * not the record: the caller may not be allowed to read that record.
 */
export class ProcedureVersionConflict extends DomainError {
  constructor(version: number, latestVersion: number) {
    super('MEMORY.PROCEDURE_VERSION_CONFLICT', `procedure version ${version} is not above the recorded version ${latestVersion}`, {
      version,
      latestVersion,
    });
  }
}

/** Versions that no longer count: an erased procedure version may be written again. */
const GONE: readonly MemoryStatus[] = ['deleted', 'purged'];
/** Versions a newer one takes out of recall. */
const SUPERSEDABLE: readonly MemoryStatus[] = ['candidate', 'active', 'disputed'];

export type ProcedureDecision =
  { kind: 'conflict'; latest: { id: string; version: number } } | { kind: 'record'; revisions: MemoryRecord[] };

/**
 * What recording the procedure version `incoming` does, given the current
 * records of the same procedure (`current`, any status, may include
 * `incoming`'s own id, which is ignored). A version at or below one already
 * recorded is a conflict. Otherwise every earlier version recall may still
 * return is superseded, as a new version of its record (version + 1,
 * revisedAt `at`, rule `procedure_version` against `incoming`), so that as
 * known before `at` it is still the procedure in force. Deterministic: `at`
 * comes from the caller.
 */
export function decideProcedureVersion(incoming: MemoryRecord, current: readonly MemoryRecord[], at: string): ProcedureDecision {
  const procedure = incoming.content.procedure;
  if (!procedure) return { kind: 'record', revisions: [] };
  const key = procedureKey(procedure.name);
  const others = current.filter(
    (r) =>
      r.id !== incoming.id &&
      r.kind === 'procedural' &&
      r.content.procedure &&
      procedureKey(r.content.procedure.name) === key &&
      !GONE.includes(r.status),
  );
  const latest = others.reduce<MemoryRecord | undefined>(
    (top, r) => (top === undefined || r.content.procedure!.version > top.content.procedure!.version ? r : top),
    undefined,
  );
  if (latest && latest.content.procedure!.version >= procedure.version) {
    return { kind: 'conflict', latest: { id: latest.id, version: latest.content.procedure!.version } };
  }
  const revisions = others
    .filter((r) => SUPERSEDABLE.includes(r.status))
    .map((r) => ({
      ...r,
      status: 'superseded' as const,
      version: r.version + 1,
      revisedAt: at,
      resolution: { rule: 'procedure_version' as const, against: [incoming.id], decidedAt: at },
    }));
  return { kind: 'record', revisions };
}

/**
 * Of the procedural records among `records`, only the highest version of each
 * procedure; everything else passes. The index already returns one version in
 * force per procedure; this keeps recall right in the moment between a new
 * version's write and its predecessor's revision reaching the index.
 */
export function latestProcedureVersions<T extends { record: MemoryRecord }>(items: readonly T[]): T[] {
  const highest = new Map<string, number>();
  for (const { record } of items) {
    const procedure = record.kind === 'procedural' ? record.content.procedure : undefined;
    if (!procedure) continue;
    const key = procedureKey(procedure.name);
    highest.set(key, Math.max(highest.get(key) ?? 0, procedure.version));
  }
  return items.filter(({ record }) => {
    const procedure = record.kind === 'procedural' ? record.content.procedure : undefined;
    return !procedure || procedure.version === highest.get(procedureKey(procedure.name));
  });
}

/** An entity's identity: its type and its id, normalised (`project:apollo`). */
export const entityKey = (ref: EntityRef): string => `${ref.type}:${normalise(ref.id)}`;

/**
 * The one search word the index stores for each endpoint of an edge, so that
 * edges are found by the entities they connect and not only by the words of
 * their text. A hash (FNV-1a, 64 bits) rather than the key itself, because
 * ids hold punctuation that a tokenizer would split; a collision only adds a
 * candidate that the exact endpoint check then drops.
 */
export function entityToken(ref: EntityRef): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(entityKey(ref))) {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return `ent${hash.toString(16).padStart(16, '0')}`;
}

const ENTITY_TYPES = new Set<string>(EntityType.options);

/**
 * The entities a record names: both ends of an edge, or the entity of a fact
 * when it is written as an entity key (`customer:c-1042`).
 */
export function entitiesNamedIn(record: Pick<MemoryRecord, 'content'>): EntityRef[] {
  const { relation, fact } = record.content;
  if (relation) return [relation.from, relation.to];
  if (fact) {
    const colon = fact.entity.indexOf(':');
    const type = fact.entity.slice(0, colon).trim().toLowerCase();
    const id = fact.entity.slice(colon + 1).trim();
    if (colon > 0 && ENTITY_TYPES.has(type) && id.length > 0) return [{ type: type as EntityType, id }];
  }
  return [];
}
