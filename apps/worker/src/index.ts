export * from './worker';
export * from './client';
export * from './assemble';
export * from './format-rebuilds';
