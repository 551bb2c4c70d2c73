/**
 * The version of every format ELMA persists or hands out, named once. A
 * document carries its version (`formatVersion`, `version`) so a later
 * release can read, migrate or refuse it knowingly.
 */
export const FORMAT_VERSIONS = {
  /** The subject-access export (GDPR Art. 15/20): `SubjectExport.formatVersion`. */
  subjectExport: 1,
} as const;
export type FormatVersions = typeof FORMAT_VERSIONS;
