export * from './storage-health';
