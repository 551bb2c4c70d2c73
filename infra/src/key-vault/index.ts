// The contract suite imports vitest, so it is not re-exported here; adapters' specs import '../contract'.
export { SqliteKeyVault, masterKeyIdOf, type SqliteKeyVaultOptions } from './sqlite/sqlite-key-vault';
export * from './transit';
