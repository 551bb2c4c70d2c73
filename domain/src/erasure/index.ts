export * from './erasure';
export * from './closure';
export * from './certificate';
