import {
  FORMAT_VERSIONS,
  FormatTooNew,
  isLegacySubjectStream,
  parseStreamName,
  streams,
  type EventLog,
  type KeyVault,
  type RecordedEvent,
} from '@elma/domain';
import { SqliteEventLog, type LayoutFile } from '@elma/infra';
import { legalHoldStream, storedHold, type StoredLegalHold } from '@elma/application';
import { deterministicUuid } from '@elma/shared';

/** The data-folder layout from which subjects are named by pseudonyms only (later layouts: `FORMAT_VERSIONS.eventLog`). */
export const PSEUDONYM_LAYOUT = 1;

/** Where holds were kept while they named subjects in clear. */
const LEGACY_HOLD_PREFIX = streams.categories.legacyLegalHolds;
const LEGACY_EVENTS_PREFIX = streams.categories.events;

/** Marks, in a log that cannot record a layout version of its own (EventStoreDB), that the migration finished. */
export const MIGRATION_STREAM = streams.migrations;
const LAYOUT_MIGRATED = 'LayoutMigrated';

export interface PseudonymMigration {
  /** Event streams renamed (SQLite) or copied and deleted (EventStoreDB). */
  streams: number;
  /** Hold streams rewritten. */
  holds: number;
}

/** A subject's stream or hold was written between the look-up and the migration: look again. */
class SubjectUnmapped extends Error {}

/**
 * Moves a data folder made before subject pseudonyms to names that carry
 * none: each `events-{tenant}-{subject}` stream to
 * `events-{tenant}-{pseudonym}`, and each `legalhold-{tenant}` stream
 * (subjects in clear) to `legalholds-{tenant}` with subjects as pseudonyms.
 * Pseudonyms are created in the key vault first (idempotently), then the log
 * is changed. Runs on every open and returns at once when there is nothing
 * to do; after a crash the next open finishes the job.
 */
export async function migrateToPseudonyms(log: EventLog, vault: KeyVault): Promise<PseudonymMigration> {
  if (log instanceof SqliteEventLog) return migrateSqlite(log, vault);
  return migrateByCopy(log, vault);
}

/**
 * SQLite: in place, in one transaction. Positions, revisions and ids stay,
 * so the projection's checkpoint stays valid and nothing is applied twice;
 * the old names and hold bytes are overwritten (secure_delete, WAL truncated).
 */
async function migrateSqlite(log: SqliteEventLog, vault: KeyVault): Promise<PseudonymMigration> {
  for (let attempt = 1; ; attempt++) {
    if (log.layoutVersion() >= PSEUDONYM_LAYOUT) return { streams: 0, holds: 0 };
    // Pseudonyms first (the vault is another file), from a look before the transaction; the plan looks again inside it.
    const found = legacyNames(log.layoutFile());
    const pseudonyms = await createPseudonyms(vault, found.subjects);
    let result: PseudonymMigration = { streams: 0, holds: 0 };
    try {
      await log.migrateLayout(PSEUDONYM_LAYOUT, (file) => {
        const { streams: legacyStreams, holds } = legacyNames(file);
        const renames: [string, string][] = legacyStreams.map((stream) => [stream, newStreamName(stream, pseudonyms)]);
        const rewrites: { position: bigint; data: unknown }[] = [];
        for (const holdStream of holds) {
          const tenant = holdStream.slice(LEGACY_HOLD_PREFIX.length);
          renames.push([holdStream, legalHoldStream(tenant)]);
          for (const event of file.readStream(holdStream)) {
            const rewritten = rewrittenHold(event, pseudonyms.get(tenant));
            if (rewritten) rewrites.push({ position: event.position, data: rewritten });
          }
        }
        // Old files listed deleted streams by name: a subject's id must not stay there either.
        const forgetDeleted = file.plainDeletedNames().filter(isLegacySubjectStream);
        result = { streams: legacyStreams.length, holds: holds.length };
        return { renames, rewrites, forgetDeleted };
      });
      return result;
    } catch (error) {
      if (!(error instanceof SubjectUnmapped) || attempt >= 3) throw error;
    }
  }
}

/** The legacy subject streams and hold streams of a file, and the subjects they name, by tenant. */
function legacyNames(file: Pick<LayoutFile, 'streamNames' | 'readStream'>) {
  const subjects = new Map<string, Set<string>>();
  const add = (tenant: string, subject: string) => {
    let set = subjects.get(tenant);
    if (!set) subjects.set(tenant, (set = new Set()));
    set.add(subject);
  };
  const legacyStreams = file.streamNames(LEGACY_EVENTS_PREFIX).filter(isLegacySubjectStream);
  for (const stream of legacyStreams) {
    const { tenant, id } = parseStreamName(stream)!;
    add(tenant, id);
  }
  const holds = file.streamNames(LEGACY_HOLD_PREFIX);
  for (const stream of holds) {
    for (const event of file.readStream(stream)) {
      for (const subject of (event.data as StoredLegalHold | null)?.scope?.subjects ?? [])
        add(stream.slice(LEGACY_HOLD_PREFIX.length), subject);
    }
  }
  return { streams: legacyStreams, holds, subjects };
}

async function createPseudonyms(vault: KeyVault, subjects: Map<string, Set<string>>): Promise<Map<string, Map<string, string>>> {
  const pseudonyms = new Map<string, Map<string, string>>();
  for (const [tenant, ofTenant] of subjects) pseudonyms.set(tenant, await vault.subjectPseudonyms(tenant, [...ofTenant], { create: true }));
  return pseudonyms;
}

function newStreamName(stream: string, pseudonyms: Map<string, Map<string, string>>): string {
  const { tenant, id } = parseStreamName(stream)!;
  const pseudonym = pseudonyms.get(tenant)?.get(id);
  if (!pseudonym) throw new SubjectUnmapped();
  return streams.events(tenant, pseudonym);
}

/** A placed hold's stored form with subjects as pseudonyms; undefined when it names no subject in clear. */
function rewrittenHold(event: RecordedEvent, pseudonyms: Map<string, string> | undefined): StoredLegalHold | undefined {
  const hold = event.data as StoredLegalHold | null;
  if (event.type !== 'LegalHoldPlaced' || !hold?.scope?.subjects) return undefined;
  if (hold.scope.subjects.some((s) => !pseudonyms?.has(s))) throw new SubjectUnmapped();
  return storedHold(hold, pseudonyms!);
}

/**
 * A log whose events cannot be changed (EventStoreDB): each legacy stream is
 * copied to its new name (same event ids, so a repeated copy appends
 * nothing) and then hard-deleted; a marker event records the end. A crash
 * anywhere leaves old or new streams readable and the next open resumes.
 * What it cannot do: EventStoreDB keeps a hard-deleted stream's name in its
 * tombstone, so the old names (with the subjects' ids) stay in the database
 * until the tombstones themselves are gone (see the README), and the old
 * events' bytes stay in its chunk files until a scavenge.
 */
export async function migrateByCopy(log: EventLog, vault: KeyVault): Promise<PseudonymMigration> {
  for await (const marker of log.readStream(MIGRATION_STREAM, { direction: 'backwards', fromRevision: 'end', maxCount: 1 })) {
    const version = Number((marker.data as { version?: number }).version);
    // A log laid out by a newer build is refused, not read as this one.
    if (marker.type === LAYOUT_MIGRATED && version > FORMAT_VERSIONS.eventLog) throw new FormatTooNew('eventLog', version, 'event log');
    if (marker.type === LAYOUT_MIGRATED && version >= PSEUDONYM_LAYOUT) {
      // Past the pseudonyms, only the meaning moved on since (see FORMAT_VERSIONS.eventLog): stamp it.
      if (version < FORMAT_VERSIONS.eventLog) await stampLayout(log);
      return { streams: 0, holds: 0 };
    }
  }
  const names = new Set<string>();
  for await (const event of log.readAll({ filter: { streamNamePrefix: [LEGACY_EVENTS_PREFIX, LEGACY_HOLD_PREFIX] } }))
    names.add(event.streamId);
  const byStream = new Map<string, RecordedEvent[]>();
  for (const stream of names) {
    if (!isLegacySubjectStream(stream) && !stream.startsWith(LEGACY_HOLD_PREFIX)) continue;
    const events: RecordedEvent[] = [];
    for await (const event of log.readStream(stream)) events.push(event);
    byStream.set(stream, events);
  }
  const found = legacyNames({
    streamNames: (prefix) => [...byStream.keys()].filter((s) => s.startsWith(prefix)),
    readStream: (s) => byStream.get(s) ?? [],
  });
  const pseudonyms = await createPseudonyms(vault, found.subjects);
  const copy = async (from: string, to: string, events: RecordedEvent[], data: (event: RecordedEvent) => unknown) => {
    if (events.length > 0) {
      await log.append(
        to,
        events.map((event) => ({ id: event.id, type: event.type, data: data(event), metadata: event.metadata })),
        { expectedRevision: 'any' },
      );
    }
    await log.deleteStream(from);
  };
  for (const stream of found.streams) await copy(stream, newStreamName(stream, pseudonyms), byStream.get(stream)!, (e) => e.data);
  for (const stream of found.holds) {
    const tenant = stream.slice(LEGACY_HOLD_PREFIX.length);
    await copy(stream, legalHoldStream(tenant), byStream.get(stream)!, (e) => rewrittenHold(e, pseudonyms.get(tenant)) ?? e.data);
  }
  await stampLayout(log);
  return { streams: found.streams.length, holds: found.holds.length };
}

/** Marks the log as in this build's layout; one fixed event id per version, so a repeated stamp appends nothing. */
async function stampLayout(log: EventLog): Promise<void> {
  const version = FORMAT_VERSIONS.eventLog;
  await log.append(
    MIGRATION_STREAM,
    [{ id: deterministicUuid(LAYOUT_MIGRATED, String(version)), type: LAYOUT_MIGRATED, data: { version } }],
    { expectedRevision: 'any' },
  );
}
