export { AuditLog, sha256Hex, type AuditLogDeps, type RecordAuditEntry } from './audit-log';
