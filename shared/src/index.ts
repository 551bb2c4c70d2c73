export * from './ids';
export * from './logger';
export * from './token-counter';
export * from './storage-full';
export * from './crypto';
export * from './page-cursor';
export * from './version';
