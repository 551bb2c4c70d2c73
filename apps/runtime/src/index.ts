export * from './elma';
export * from './pseudonym-migration';
