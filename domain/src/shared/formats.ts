/**
 * The version of every persisted format. A format that changes gets a new
 * number here, and what it persists carries the number it was written with
 * (a `formatVersion`/`version` field, or a `user_version`/meta row); a reader
 * that meets a version it does not know refuses it rather than guess.
 */
export const FORMAT_VERSIONS = {
  erasureLedger: 1,
  backupManifest: 1,
  /** The signed tenant off-boarding certificate (`version`) and the tenant export archive (`formatVersion`). */
  offboardingCertificate: 1,
  tenantExport: 1,
} as const;

export type FormatName = keyof typeof FORMAT_VERSIONS;
export type FormatVersions = typeof FORMAT_VERSIONS;
