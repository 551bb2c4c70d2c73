export { AuditLog, sha256Hex, type AuditLogDeps, type RecordAuditEntry } from './audit-log';
export { recordedName, type AuditActor, type AuditCaller } from './audit-actor';
