export * from './elma';
export * from './pseudonym-migration';
export * from './data-folder-formats';
export * from './key-administration';
