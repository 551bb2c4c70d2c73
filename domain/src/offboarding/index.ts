export * from './offboarding';
export * from './certificate';
