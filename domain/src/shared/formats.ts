/**
 * Versions of every format ELMA persists. A file or document carries its
 * version (a `formatVersion`/`version` field, or a `user_version`/meta row);
 * a reader that meets a version it does not know refuses it rather than guess.
 */
export const FORMAT_VERSIONS = {
  erasureLedger: 1,
  backupManifest: 1,
} as const;

export type FormatName = keyof typeof FORMAT_VERSIONS;
