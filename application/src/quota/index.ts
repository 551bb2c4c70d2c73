export * from './stored-usage';
export * from './tenant-quotas';
