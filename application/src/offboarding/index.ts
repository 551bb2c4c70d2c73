export * from './tenant-closures';
export * from './offboarding-store';
export * from './offboarding-requests';
export * from './offboarding-steps';
export * from './tenant-streams';
export * from './offboarding-reapply';
