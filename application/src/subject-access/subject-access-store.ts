import {
  SignedSubjectAccessManifest,
  streams,
  type EventLog,
  type ExpectedRevision,
  type RecordedEvent,
  type SubjectAccessStatus,
} from '@elma/domain';
import { deterministicUuid, type Sealed } from '@elma/shared';

/** Event types of a subject-access stream (`subjectaccess-<tenant>-<requestId>`). */
export const SUBJECT_ACCESS_EVENTS = {
  requested: 'SubjectAccessRequested',
  produced: 'SubjectExportProduced',
  failed: 'SubjectAccessFailed',
  deleted: 'SubjectExportDeleted',
} as const;

export interface SubjectAccessRequested {
  requestId: string;
  tenant: string;
  /** The requester's id; for a data subject asking for themself, their pseudonym (the id is never stored in clear). */
  requestedBy: string;
  selfService: boolean;
  requestedAt: string;
  subjectPseudonym: string;
  /** The subject id, sealed under the request's key. */
  subject: Sealed;
}

export interface SubjectExportProduced {
  producedAt: string;
  expiresAt: string;
  /** Ids of every record the export covers (whole or withheld): an erasure of any of them deletes the export. */
  recordIds: string[];
  /** `{ json, pdf }` in base64, sealed under the request's key. */
  files: Sealed;
  manifest: SignedSubjectAccessManifest;
}

export type ExportDeletion = 'expired' | 'erased';

/** One request folded from its stream. */
export interface SubjectAccessState {
  request: SubjectAccessRequested;
  status: SubjectAccessStatus;
  produced?: SubjectExportProduced;
  failure?: { code: string; at: string };
  deleted?: { reason: ExportDeletion; at: string };
  revision: bigint;
}

/** The vault key that seals a request's subject and export files; shredding it makes both unreadable. */
export const subjectAccessKeyId = (requestId: string) => `subject-access:${requestId}`;

/**
 * The subject-access streams of the event log: one per request, appended in
 * order (requested, then produced or failed, then deleted). Content (the
 * subject id, the files) is sealed by the caller; this store writes and folds.
 */
export class SubjectAccessStore {
  constructor(private readonly deps: { log: EventLog }) {}

  async create(request: SubjectAccessRequested): Promise<void> {
    await this.append(request.tenant, request.requestId, SUBJECT_ACCESS_EVENTS.requested, request, 'no_stream');
  }

  /** The request as its stream stands; undefined when there is none. */
  async load(tenant: string, requestId: string): Promise<SubjectAccessState | undefined> {
    const events: RecordedEvent[] = [];
    for await (const event of this.deps.log.readStream(streams.subjectAccess(tenant, requestId))) events.push(event);
    return fold(events);
  }

  /** Every request of the tenant, folded (for an erasure looking for exports it must delete). */
  async *all(tenant: string): AsyncIterable<SubjectAccessState> {
    const byStream = new Map<string, RecordedEvent[]>();
    for await (const event of this.deps.log.readAll({ filter: { streamNamePrefix: [streams.subjectAccessOfTenant(tenant)] } })) {
      const list = byStream.get(event.streamId);
      if (list) list.push(event);
      else byStream.set(event.streamId, [event]);
    }
    for (const events of byStream.values()) {
      const state = fold(events);
      if (state) yield state;
    }
  }

  produced(state: SubjectAccessState, produced: SubjectExportProduced): Promise<void> {
    return this.append(state.request.tenant, state.request.requestId, SUBJECT_ACCESS_EVENTS.produced, produced, state.revision);
  }

  failed(state: SubjectAccessState, failure: { code: string; at: string }): Promise<void> {
    return this.append(state.request.tenant, state.request.requestId, SUBJECT_ACCESS_EVENTS.failed, failure, 'stream_exists');
  }

  deleted(state: SubjectAccessState, deletion: { reason: ExportDeletion; at: string }): Promise<void> {
    return this.append(state.request.tenant, state.request.requestId, SUBJECT_ACCESS_EVENTS.deleted, deletion, 'stream_exists');
  }

  private async append(tenant: string, requestId: string, type: string, data: unknown, expectedRevision: ExpectedRevision): Promise<void> {
    // One event of each type per request: a retried append is a no-op.
    const id = deterministicUuid('subject-access', tenant, requestId, type);
    await this.deps.log.append(streams.subjectAccess(tenant, requestId), [{ id, type, data }], { expectedRevision });
  }
}

function fold(events: RecordedEvent[]): SubjectAccessState | undefined {
  let state: SubjectAccessState | undefined;
  for (const event of events) {
    switch (event.type) {
      case SUBJECT_ACCESS_EVENTS.requested:
        state = { request: event.data as SubjectAccessRequested, status: 'running', revision: event.revision };
        break;
      case SUBJECT_ACCESS_EVENTS.produced:
        if (state) Object.assign(state, { produced: event.data as SubjectExportProduced, status: 'completed' });
        break;
      case SUBJECT_ACCESS_EVENTS.failed:
        if (state) Object.assign(state, { failure: event.data, status: 'failed' });
        break;
      case SUBJECT_ACCESS_EVENTS.deleted: {
        const deleted = event.data as SubjectAccessState['deleted'] & object;
        if (state) Object.assign(state, { deleted, status: deleted.reason });
        break;
      }
    }
    if (state) state.revision = event.revision;
  }
  return state;
}
