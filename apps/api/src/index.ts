export * from './app';
export * from './http/problem';
export * from './erasure/erasure-desk';
