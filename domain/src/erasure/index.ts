export * from './erasure';
export * from './closure';
export * from './certificate';
export * from './raw-scan';
