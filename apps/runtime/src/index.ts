export * from './elma';
export * from './pseudonym-migration';
export * from './key-administration';
