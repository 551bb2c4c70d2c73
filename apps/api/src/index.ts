export * from './app';
export * from './http/problem';
