export * from './cli-binary';
export * from './dev-server';
export * from './errors';
