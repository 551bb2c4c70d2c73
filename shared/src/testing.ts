export * from './testing/child-process';
