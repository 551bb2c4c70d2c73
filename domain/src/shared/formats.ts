/**
 * The version of each persisted format, written into what is persisted (a
 * `formatVersion` field, a `user_version` or a meta row). A reader refuses a
 * version newer than its own and migrates an older one.
 */
export const FORMAT_VERSIONS = {
  /** keys.db: 2 = versioned master, tenant and signing keys (key rotation). */
  keyVault: 2,
} as const;

export type FormatName = keyof typeof FORMAT_VERSIONS;
