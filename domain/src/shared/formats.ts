/**
 * The version of every persisted format. A format that changes gets a new
 * number here, and what it persists carries the number it was written with.
 */
export const FORMAT_VERSIONS = {
  /** The signed tenant off-boarding certificate (`version`) and the tenant export archive (`formatVersion`). */
  offboardingCertificate: 1,
  tenantExport: 1,
} as const;
export type FormatVersions = typeof FORMAT_VERSIONS;
