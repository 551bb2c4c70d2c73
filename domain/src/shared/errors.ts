/**
 * Domain errors carry a stable, machine-readable `code` of the form
 * `AREA.CODE` (upper case, e.g. `MEMORY.NOT_FOUND`). The API maps codes to
 * RFC 9457 problem+json; activities map them to non-retryable failures.
 * Messages never contain memory content or secrets: only ids, paths and kinds.
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** An append's expected revision did not match the stream's actual revision. Nothing was written. */
export class WrongExpectedVersion extends DomainError {
  constructor(
    readonly streamName: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super('EVENT_LOG.WRONG_EXPECTED_VERSION', `stream ${streamName}: expected revision ${expected}, actual ${actual}`, {
      stream: streamName,
      expected,
      actual,
    });
  }
}

/** The stream was hard-deleted and cannot be written again (mirrors EventStoreDB's StreamDeleted). */
export class StreamDeleted extends DomainError {
  constructor(readonly streamName: string) {
    super('EVENT_LOG.STREAM_DELETED', `stream ${streamName} has been deleted`, { stream: streamName });
  }
}

/** The data key of a record has been destroyed (crypto-shredding); its ciphertext is unreadable forever. */
export class KeyShredded extends DomainError {
  constructor(readonly recordId: string) {
    super('KEY_VAULT.KEY_SHREDDED', `the data key of record ${recordId} has been shredded`, { recordId });
  }
}

/** The tenant's key material (salt) was destroyed: the whole tenant is unreadable. */
export class TenantDestroyed extends DomainError {
  constructor(readonly tenant: string) {
    super('KEY_VAULT.TENANT_DESTROYED', `tenant ${tenant} has been destroyed`, { tenant });
  }
}

export class MemoryNotFound extends DomainError {
  constructor(readonly memoryId: string) {
    super('MEMORY.NOT_FOUND', `memory ${memoryId} not found`, { memoryId });
  }
}

/** Input failed a schema; `path` names the failing field, never its value. */
export class ValidationFailed extends DomainError {
  constructor(readonly issues: { path: string; message: string }[]) {
    super('REQUEST.VALIDATION_FAILED', `invalid request: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, {
      issues,
    });
  }
}

/** Content carries a secret and the tenant's policy rejects it. Names the kind and field path, never the secret. */
export class SecretDetected extends DomainError {
  constructor(readonly findings: { path: string; kind: string }[]) {
    super('HYGIENE.SECRET_DETECTED', `secret detected: ${findings.map((f) => `${f.kind} at ${f.path}`).join('; ')}`, { findings });
  }
}

/** A request named a tenant other than the one its token is bound to. */
export class TenantMismatch extends DomainError {
  constructor() {
    super('AUTH.TENANT_MISMATCH', 'the request names a tenant other than the one the token is bound to');
  }
}

/** The tenant's policy does not allow this operation for this caller (default deny). */
export class PolicyDenied extends DomainError {
  constructor(operation: string, rule = 'default-deny') {
    super('POLICY.DENIED', `the policy does not allow ${operation} here (${rule})`, { operation, rule });
  }
}
