import type { ReadExclusions } from '../policy/clause';
import { SENSITIVITY_RANK, type Ancestry, type MemoryRecord, type Sensitivity, type SourceRef } from './record';

/**
 * Restrictions flow along lineage (paper, section 6.2 'Completeness of the deletion closure'): a derived record is never easier to
 * read than any of its inputs. Static restrictions are combined once, when
 * the record is derived (`inheritedRestrictions`); legal holds, which come
 * and go, are resolved when the record is read, against the keys of every
 * ancestor the record carries (`restrictionKeys`).
 */

const unique = (values: Iterable<string>) => [...new Set(values)].sort();

/** The earlier of two expiries; null is "never". */
export function earliestExpiry(...expiries: (string | null | undefined)[]): string | null {
  const set = expiries.filter((e): e is string => typeof e === 'string');
  return set.length === 0 ? null : set.reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
}

/**
 * What a record derived from `inputs` inherits from them and from everything
 * upstream of them. A working memory's own expiry is its session's, which a
 * promotion is meant to outlive, so only what it inherited counts.
 */
export function ancestryOf(inputs: readonly MemoryRecord[]): Ancestry {
  const ids: string[] = [];
  const owners: string[] = [];
  const projects: string[] = [];
  const sessions: string[] = [];
  const expiries: (string | null)[] = [];
  for (const input of inputs) {
    const upstream = input.provenance.ancestry;
    ids.push(input.id, ...input.provenance.parentIds, ...input.provenance.sourceEventIds, ...(upstream?.ids ?? []));
    owners.push(input.policy.owner, input.subject, ...(upstream?.owners ?? []));
    if (input.policy.project !== undefined) projects.push(input.policy.project);
    projects.push(...(upstream?.projects ?? []));
    if (input.session !== undefined) sessions.push(input.session);
    sessions.push(...(upstream?.sessions ?? []));
    expiries.push(upstream?.expiresAt ?? null);
    if (input.kind !== 'working') expiries.push(input.retention.expiresAt);
  }
  return {
    ids: unique(ids),
    owners: unique(owners),
    projects: unique(projects),
    ...(sessions.length > 0 ? { sessions: unique(sessions) } : {}),
    expiresAt: earliestExpiry(...expiries),
  };
}

/** The sources of `refs` once each, sorted by system then channel (a record's `sources`). */
export function uniqueSources(refs: Iterable<SourceRef>): SourceRef[] {
  const byKey = new Map<string, SourceRef>();
  for (const ref of refs) byKey.set(JSON.stringify([ref.system, ref.channel ?? null]), ref);
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, ref]) => ref);
}

/**
 * The sources of a record derived from `inputs`: the union of theirs, so a
 * summary of email turns joins a recall scoped to email. Spread into the
 * record (absent when no input has any).
 */
export function inheritedSources(inputs: readonly Pick<MemoryRecord, 'sources'>[]): { sources?: SourceRef[] } {
  const sources = uniqueSources(inputs.flatMap((r) => r.sources ?? []));
  return sources.length > 0 ? { sources } : {};
}

/** The restrictions a record derived from `inputs` must carry at least. */
export interface InheritedRestrictions {
  /** The highest sensitivity of the inputs. */
  sensitivity: Sensitivity;
  /** The purposes every input allows (empty: no purpose may use the derived record, so it must not be made). */
  purposes: string[];
  /** The project every input and ancestor belongs to, if there is one: a project rule must not admit another project's data. */
  project?: string;
  ancestry: Ancestry;
}

export function inheritedRestrictions(inputs: readonly MemoryRecord[]): InheritedRestrictions {
  if (inputs.length === 0) throw new RangeError('a derived record has at least one input');
  const ancestry = ancestryOf(inputs);
  const project = inputs[0].policy.project;
  const oneProject =
    project !== undefined && inputs.every((r) => r.policy.project === project) && ancestry.projects.every((p) => p === project);
  return {
    sensitivity: inputs.map((r) => r.policy.sensitivity).reduce((a, b) => (SENSITIVITY_RANK[b] > SENSITIVITY_RANK[a] ? b : a)),
    purposes: inputs.map((r) => r.policy.purposes).reduce((a, b) => a.filter((p) => b.includes(p))),
    ...(oneProject ? { project } : {}),
    ancestry,
  };
}

/**
 * The instruction-like flag of a record derived from `inputs`: set when any
 * input has it, so a summary or promotion of injected text is still packed
 * as quoted data. Spread into the record (absent when no input is flagged).
 */
export function inheritedInstructionFlag(inputs: readonly Pick<MemoryRecord, 'instructionLike'>[]): { instructionLike?: true } {
  return inputs.some((r) => r.instructionLike === true) ? { instructionLike: true } : {};
}

/**
 * A record's sources are fixed when it is derived, and its later versions
 * carry them. A version logged before records kept them (absent) takes them
 * from the version it follows, so a rebuild of the views gives old revisions
 * the sources their first version is derived with.
 */
export function withSourcesOf(record: MemoryRecord, earlier: Pick<MemoryRecord, 'sources'> | undefined): MemoryRecord {
  return record.sources === undefined && earlier?.sources !== undefined ? { ...record, sources: earlier.sources } : record;
}

/** The key a record carries when it derives from records of another owner: no owner-only rule can then admit it. */
export const SHARED_OWNERSHIP_KEY = 'shared';

/** What lineage and hold coverage read of a record: identity, ownership and provenance. */
export type LineageTarget = Pick<MemoryRecord, 'id' | 'subject'> & {
  policy: Pick<MemoryRecord['policy'], 'owner' | 'project'>;
  provenance: Pick<MemoryRecord['provenance'], 'parentIds' | 'sourceEventIds' | 'ancestry'>;
};

const idKey = (id: string) => `id:${id}`;
const ownerKey = (owner: string) => `owner:${owner}`;
const projectKey = (project: string) => `project:${project}`;

/**
 * Everything a legal hold can name that covers this record: its own id,
 * owner, subject and project, and those of every ancestor (source events
 * included). Index adapters store these beside the record and withhold it
 * when any is held; `SHARED_OWNERSHIP_KEY` marks a record owned with others.
 * Records derived before ancestry was kept fall back to their direct inputs.
 */
export function restrictionKeys(record: LineageTarget): string[] {
  const upstream = record.provenance.ancestry;
  const keys = [
    ...[record.id, ...record.provenance.parentIds, ...record.provenance.sourceEventIds, ...(upstream?.ids ?? [])].map(idKey),
    ...[record.policy.owner, record.subject, ...(upstream?.owners ?? [])].map(ownerKey),
    ...[...(record.policy.project !== undefined ? [record.policy.project] : []), ...(upstream?.projects ?? [])].map(projectKey),
  ];
  if (isSharedOwnership(record)) keys.push(SHARED_OWNERSHIP_KEY);
  return unique(keys);
}

/** True when the record derives from records of an owner other than its own. */
export function isSharedOwnership(record: Pick<LineageTarget, 'policy' | 'provenance'>): boolean {
  return (record.provenance.ancestry?.owners ?? []).some((owner) => owner !== record.policy.owner);
}

/** The keys an exclusion withholds (see `restrictionKeys`). */
export function exclusionKeys(exclude: ReadExclusions): string[] {
  return unique([...(exclude.ids ?? []).map(idKey), ...(exclude.owners ?? []).map(ownerKey), ...(exclude.projects ?? []).map(projectKey)]);
}

/** The record as an API answer shows it: ancestry names other subjects and records, and stays inside. */
export function withoutAncestry(record: MemoryRecord): MemoryRecord {
  if (record.provenance.ancestry === undefined) return record;
  const { ancestry: _ancestry, ...provenance } = record.provenance;
  return { ...record, provenance };
}
