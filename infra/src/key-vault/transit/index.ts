export { TransitKeyVault, type TransitKeyVaultOptions, type TenantKeyRotation, type TenantKeyStatus } from './transit-key-vault';
export { TransitClient, type TransitClientOptions } from './client';
export { KmsUnavailable, type KmsFailure } from './errors';
export { transitPolicy } from './policy';
export { sqliteVaultHoldsTenantKeys } from './foreign-vault';
