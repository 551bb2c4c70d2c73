export * from './storage-full';
export * from './storage-health';
