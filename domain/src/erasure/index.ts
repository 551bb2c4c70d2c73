export * from './erasure';
export * from './closure';
export * from './certificate';
export * from './raw-scan';
export * from './decider';
export * from './tombstone-decider';
export * from './outbox-decider';
export * from './ledger';
