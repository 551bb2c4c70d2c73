import { DomainError } from './errors';

/**
 * The version of every format ELMA persists, as this build writes it. A
 * change to one bumps its number here, with what opening an older one does
 * (see `FORMAT_UPGRADES`). Files written before versions were recorded read
 * as version 0.
 *
 * - `eventLog`: the layout of `events.db` (SQLite `user_version`; 1 = streams
 *   named by subject pseudonyms; 2 = a `streams` table numbering the streams, event ids in 16 bytes; 3 = the
 *   first versions of records extracted from an ingested event are no longer appended, they are derived from
 *   it: docs/adr/0014) and, on EventStoreDB, the `LayoutMigrated` marker event.
 * - `events`: the sealed envelope of an event's content (`Sealed.v`).
 * - `keyVault`: `keys.db` (SQLite `user_version`; 2 = versioned master, tenant and signing keys, for rotation).
 * - `indexMeta`: the embedded index's `index/meta.db` (checkpoints, quarantine; `user_version`).
 * - `indexRows`: a tenant partition `index/tenant-<t>.db` (`user_version`): its rows and their vectors (2 = a row's
 *   JSON record leaves out the fields its columns hold, the tenant and all-zero usage counts; 3 = `scope_set`, the
 *   keys a recall's `filter` matches, with records' sources and their ancestry's sessions, which only a rebuild
 *   from the log gives records indexed before).
 * - `vectors`: how a partition's vectors are stored (1 = float32 BLOBs; 2 = int8 and a scale; usearch graph), kept in
 *   `partition_state`.
 * - `tokenisation`: how BM25 terms are cut and stemmed (`documentAnalysisCode`), kept in `partition_state`.
 * - `certificates`: the signed erasure certificate's `version` field (inside the signed body; 2 = the issuing
 *   organisation and the display names of the staff who requested and approved; 3 = `reapply`, what the erasure
 *   ledger's entry holds, so the certificates can rebuild the ledger).
 * - `elasticsearchMapping`: the mapping of the Elasticsearch index (its concrete index name ends in `-v<n>`; 3 = the
 *   `scope` keys a recall's `filter` matches).
 * - `erasureLedger`: `erasure-ledger.db`, the completed erasures kept outside the backups' reach (`user_version`).
 * - `backupManifest`: `manifest.json` of an `elma backup` folder (`formatVersion`).
 * - `offboardingCertificate`: the signed tenant off-boarding certificate's `version` (inside the signed body).
 * - `tenantExport`: the tenant export archive written by an off-boarding (`formatVersion`).
 * - `subjectExport`: the subject-access export (GDPR Art. 15/20), `SubjectExport.formatVersion`, and its signed manifest.
 */
export const FORMAT_VERSIONS = {
  eventLog: 3,
  events: 1,
  keyVault: 2,
  indexMeta: 1,
  indexRows: 3,
  vectors: 2,
  tokenisation: 1,
  certificates: 3,
  elasticsearchMapping: 3,
  erasureLedger: 1,
  backupManifest: 1,
  offboardingCertificate: 1,
  tenantExport: 1,
  subjectExport: 1,
} as const;

export type FormatName = keyof typeof FORMAT_VERSIONS;
export type FormatVersions = { readonly [K in FormatName]: number };

/**
 * What opening a file of an older version of a format does:
 * - `in_place`: the adapter migrates it when it opens the file (SQLite schema steps, re-derived terms);
 * - `rebuild`: the file is derived data (the index); it is dropped and rebuilt from the event log by
 *   `ReindexWorkflow`, and serves as it is until then;
 * - `refuse`: nothing can read it; ELMA does not start.
 */
export type UpgradePath = 'in_place' | 'rebuild' | 'refuse';

export const FORMAT_UPGRADES: { readonly [K in FormatName]: UpgradePath } = {
  eventLog: 'in_place',
  events: 'in_place',
  keyVault: 'in_place',
  indexMeta: 'in_place',
  indexRows: 'rebuild',
  vectors: 'in_place',
  tokenisation: 'in_place',
  certificates: 'in_place',
  elasticsearchMapping: 'rebuild',
  erasureLedger: 'in_place',
  backupManifest: 'in_place',
  offboardingCertificate: 'in_place',
  tenantExport: 'in_place',
  subjectExport: 'in_place',
};

/** One persisted file as found on disk: which format, and the version it carries (undefined: not a file of that format at all). */
export interface FoundFormat {
  /** Path relative to the data folder (names only ids: `index/tenant-acme.db`). */
  file: string;
  format: FormatName;
  /** The version the file carries; undefined when the file is not readable as that format (garbage header, wrong kind of file). */
  version: number | undefined;
  /** For an index partition: its tenant (a rebuild is per tenant). */
  tenant?: string;
}

export interface FormatProblem {
  file: string;
  format: FormatName;
  found: number | undefined;
  supported: number;
  reason: 'newer' | 'unreadable';
}

/** What to do with a data folder before anything writes to it. */
export interface FormatPlan {
  /** Files this build cannot read: ELMA must not start. */
  refuse: FormatProblem[];
  /** Tenants whose index partition must be rebuilt from the log (older rows, or a partition that is not a database). */
  rebuild: string[];
  /** Files an adapter migrates in place when it opens them. */
  migrate: { file: string; format: FormatName; from: number; to: number }[];
}

/**
 * Decides, from what was found on disk, whether the folder opens and what
 * must be migrated or rebuilt. Pure. A newer version than `supported` is
 * refused, never guessed at. An unreadable file is refused unless it is an
 * index partition (derived data: rebuilt from the log).
 */
export function planFormats(found: readonly FoundFormat[], supported: FormatVersions = FORMAT_VERSIONS): FormatPlan {
  const plan: FormatPlan = { refuse: [], rebuild: [], migrate: [] };
  const rebuild = new Set<string>();
  for (const file of found) {
    const current = supported[file.format];
    const derived = file.tenant !== undefined && FORMAT_UPGRADES[file.format] === 'rebuild';
    if (file.version === undefined) {
      if (derived) rebuild.add(file.tenant!);
      else plan.refuse.push({ file: file.file, format: file.format, found: undefined, supported: current, reason: 'unreadable' });
    } else if (file.version > current) {
      plan.refuse.push({ file: file.file, format: file.format, found: file.version, supported: current, reason: 'newer' });
    } else if (file.version < current) {
      const path = FORMAT_UPGRADES[file.format];
      if (path === 'rebuild' && derived) rebuild.add(file.tenant!);
      else if (path === 'refuse')
        plan.refuse.push({ file: file.file, format: file.format, found: file.version, supported: current, reason: 'unreadable' });
      else plan.migrate.push({ file: file.file, format: file.format, from: file.version, to: current });
    }
  }
  plan.rebuild = [...rebuild].sort();
  return plan;
}

/** The refusal an operator reads: every file named, with the versions, and what to do. No content, only paths and numbers. */
export function refusalMessage(dataDir: string, problems: readonly FormatProblem[], place = `the data folder ${dataDir}`): string {
  const lines = problems.map((p) =>
    p.reason === 'newer'
      ? `  - ${p.file}: ${p.format} format version ${p.found}, newer than this build reads (${p.supported})`
      : `  - ${p.file}: not readable as ${p.format} format version ${p.supported}${p.found !== undefined ? ` (found version ${p.found})` : ' (not a database of ELMA, or damaged)'}`,
  );
  const newer = problems.some((p) => p.reason === 'newer');
  const unreadable = problems.some((p) => p.reason === 'unreadable');
  const index = problems.some((p) => p.file.startsWith('index/'));
  return [
    `ELMA cannot open ${place}; nothing in it was changed:`,
    ...lines,
    ...(newer ? ['A newer ELMA wrote it: run that version of ELMA (or a newer one), or restore a backup made by this version.'] : []),
    ...(unreadable ? ['A damaged file: restore the folder from a backup.'] : []),
    ...(index ? ['The index/ folder can instead be deleted as a whole: ELMA replays the event log into a new index when it starts.'] : []),
  ].join('\n');
}

/** The data folder holds a file this build cannot read (too new, or damaged). Raised before anything writes to the folder. */
export class DataFolderUnreadable extends DomainError {
  constructor(
    readonly dataDir: string,
    readonly problems: readonly FormatProblem[],
    /** What is named as unreadable when it is not the folder (e.g. the Elasticsearch namespace). */
    place?: string,
  ) {
    super('FORMAT.DATA_FOLDER_UNREADABLE', refusalMessage(dataDir, problems, place), { problems: problems.map((p) => ({ ...p })) });
  }
}

/** A stored item (an event's sealed envelope, a partition's state) carries a format version newer than this build reads. */
export class FormatTooNew extends DomainError {
  constructor(
    readonly format: FormatName,
    readonly found: number,
    readonly where: string,
    readonly supported: number = FORMAT_VERSIONS[format],
  ) {
    super('FORMAT.TOO_NEW', `${where}: ${format} format version ${found} is newer than this build reads (${supported}); run a newer ELMA`, {
      format,
      found,
      supported,
      where,
    });
  }
}
