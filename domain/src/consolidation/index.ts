export * from './summary';
export * from './facts';
export * from './duplicates';
