export * from './erasure-service';
export * from './erasure-store';
export * from './fingerprints';
export * from './tombstones';
export * from './guard';
export * from './verification';
export * from './erasure-outbox';
