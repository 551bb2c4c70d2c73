import type { operations, paths } from './openapi.gen.js';

/** The JSON body an operation takes. */
type JsonBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** The JSON an operation answers with `status`. */
type JsonAnswer<O, S extends number> = O extends { responses: { [K in S]: { content: { 'application/json': infer R } } } } ? R : never;
/**
 * The generated answer of `GET path` once the API document has it, else `Fallback` (written to the same
 * contract): a regenerated client picks the document's type up without a change here.
 */
type GetAnswer<P extends string, Fallback> = P extends keyof paths
  ? paths[P] extends { get: infer O }
    ? [JsonAnswer<O, 200>] extends [never]
      ? Fallback
      : JsonAnswer<O, 200>
    : Fallback
  : Fallback;

/** RFC 9457 problem details, as every REST error of ELMA is sent (`code` is stable: `AREA.CODE`). */
export type Problem = operations['MemoriesController_get']['responses'][404]['content']['application/problem+json'];

export type IngestRequest = JsonBody<operations['EventsController_ingest']>;
/** One event as `POST /v1/events` takes it. */
export type ApiEvent = Exclude<IngestRequest, { events: unknown }>;
export type IngestResult = JsonAnswer<operations['EventsController_ingest'], 202>;

export type WriteMemoryRequest = JsonBody<operations['MemoriesController_write']>;
export type WriteMemoryResult = JsonAnswer<operations['MemoriesController_write'], 201>;

/** A memory record as `GET /v1/memories/{id}` answers it (policy-filtered, without its ancestry). */
export type Memory = JsonAnswer<operations['MemoriesController_get'], 200>;
export type MemoryKind = Memory['kind'];

export type RecallRequest = JsonBody<operations['RecallController_recall']>;
/**
 * The scope of a recall (`filter`): different keys combine with AND, the values of one key with OR; each
 * list holds 1 to 100 values. A scope only narrows what the caller's policy lets it see.
 */
export type RecallFilter = NonNullable<RecallRequest['filter']>;
export type RecallResult = JsonAnswer<operations['RecallController_recall'], 200>;
export type RecallItem = RecallResult['items'][number];
export type FeedbackResult = JsonAnswer<operations['RecallController_feedback'], 200>;

export type CreateErasureRequest = JsonBody<operations['ErasuresController_create']>;
export type ErasureReason = CreateErasureRequest['reason'];
export type ErasureProgress = JsonAnswer<operations['ErasuresController_progress'], 200>;
export type ErasureCertificate = JsonAnswer<operations['ErasuresController_certificate'], 200>;

/** One page of `GET /v1/memories`. */
export type MemoryPage = GetAnswer<'/v1/memories', { items: Memory[]; nextCursor: string | null }>;
/** `GET /v1/memories/{id}/versions`: oldest first, each as the caller may see it. */
export type MemoryVersions = GetAnswer<'/v1/memories/{id}/versions', { items: Memory[] }>;
/** One page of `GET /v1/erasures`. */
export type ErasurePage = GetAnswer<'/v1/erasures', { items: ErasureProgress[]; nextCursor: string | null }>;
