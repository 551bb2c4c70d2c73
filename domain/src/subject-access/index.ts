export * from './export';
export * from './assemble';
