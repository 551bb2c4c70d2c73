export * from './embedding-stage';
