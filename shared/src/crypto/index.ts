export { sealJson, openJson, deriveTenantKey, wrapKey, unwrapKey, IntegrityCheckFailed } from './envelope';
export type { Sealed, WrapContext } from './envelope';
