export * from './subject-access-store';
export * from './subject-access-service';
