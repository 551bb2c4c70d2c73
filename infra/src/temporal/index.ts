export * from './cli-binary';
export * from './dev-server';
