export * from './worker';
export * from './client';
