import type { MemoryRecord } from '../memory/record';
import type { IndexScope } from './port';

/** The entities a record is about: its fact's entity, its relation's two ends. */
export function entitiesOf(record: Pick<MemoryRecord, 'content'>): string[] {
  const { fact, relation } = record.content;
  return [...(fact ? [fact.entity] : []), ...(relation ? [relation.from.id, relation.to.id] : [])];
}

/**
 * One scope key: the name of what it is about and the value, JSON-encoded. The
 * encoding is injective and leaves no control character in a key, so the
 * SQLite adapter can delimit keys with `\x1f` and no value can forge another key.
 */
const scopeKey = (name: 'subject' | 'project' | 'session' | 'entity' | 'system' | 'channel' | 'source', value: unknown) =>
  `${name}:${JSON.stringify(value)}`;

/**
 * Everything a scope (`IndexScope`) can match of a record, sorted: index
 * adapters store these beside the record (SQLite `scope_set`, Elasticsearch
 * `scope`) and `scopeGroups` asks for them. A record joins the scope of each
 * subject, project and session of its own and of its ancestry, the entities of
 * its content and the systems and channels of its sources.
 */
export function scopeKeys(record: Pick<MemoryRecord, 'subject' | 'policy' | 'provenance' | 'session' | 'content' | 'sources'>): string[] {
  const ancestry = record.provenance.ancestry;
  const keys = [
    ...[record.subject, ...(ancestry?.owners ?? [])].map((subject) => scopeKey('subject', subject)),
    ...[...(record.policy.project !== undefined ? [record.policy.project] : []), ...(ancestry?.projects ?? [])].map((project) =>
      scopeKey('project', project),
    ),
    ...[...(record.session !== undefined ? [record.session] : []), ...(ancestry?.sessions ?? [])].map((session) =>
      scopeKey('session', session),
    ),
    ...entitiesOf(record).map((entity) => scopeKey('entity', entity)),
    ...(record.sources ?? []).flatMap((source) => [
      scopeKey('system', source.system),
      ...(source.channel !== undefined ? [scopeKey('channel', source.channel), scopeKey('source', [source.system, source.channel])] : []),
    ]),
  ];
  return [...new Set(keys)].sort();
}

/**
 * The scope's keys as groups: a record is in the scope when it holds a key of
 * every group (`scopeKeys`). An empty group (an empty list) admits nothing.
 * The valid-time bounds are not keys: see `inOccurredRange`.
 */
export function scopeGroups(scope: IndexScope): string[][] {
  const groups: string[][] = [];
  if (scope.subjects) groups.push(scope.subjects.map((subject) => scopeKey('subject', subject)));
  if (scope.entities) groups.push(scope.entities.map((entity) => scopeKey('entity', entity)));
  if (scope.projects) groups.push(scope.projects.map((project) => scopeKey('project', project)));
  if (scope.sessions) groups.push(scope.sessions.map((session) => scopeKey('session', session)));
  if (scope.sources)
    groups.push(
      scope.sources.flatMap((source) =>
        source.system !== undefined && source.channel !== undefined
          ? [scopeKey('source', [source.system, source.channel])]
          : source.system !== undefined
            ? [scopeKey('system', source.system)]
            : source.channel !== undefined
              ? [scopeKey('channel', source.channel)]
              : [],
      ),
    );
  return groups;
}

/** The scope's valid-time bounds in epoch milliseconds: `after <= validFrom < before` (absent: open). */
export function occurredRange(scope: IndexScope): { after?: number; before?: number } {
  const at = (iso: string | undefined, field: string) => {
    if (iso === undefined) return undefined;
    const ms = Date.parse(iso);
    if (Number.isNaN(ms)) throw new RangeError(`${field} is not a valid ISO date-time`);
    return ms;
  };
  const after = at(scope.occurredAfter, 'occurredAfter');
  const before = at(scope.occurredBefore, 'occurredBefore');
  return { ...(after !== undefined ? { after } : {}), ...(before !== undefined ? { before } : {}) };
}

/** Whether the record is inside the scope (the in-memory twin of what the adapters push down). */
export function matchesScope(record: MemoryRecord, scope: IndexScope): boolean {
  const groups = scopeGroups(scope);
  if (groups.length > 0) {
    const keys = new Set(scopeKeys(record));
    if (!groups.every((group) => group.some((key) => keys.has(key)))) return false;
  }
  const { after, before } = occurredRange(scope);
  const validFrom = Date.parse(record.validFrom);
  return (after === undefined || validFrom >= after) && (before === undefined || validFrom < before);
}
