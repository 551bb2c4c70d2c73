import { Transport, type RetryInfo } from './http.js';
import type {
  ApiEvent,
  CreateErasureRequest,
  ErasureCertificate,
  ErasurePage,
  ErasureProgress,
  ErasureReason,
  FeedbackResult,
  IngestResult,
  Memory,
  MemoryKind,
  MemoryPage,
  MemoryVersions,
  RecallRequest,
  RecallFilter,
  RecallResult,
  WriteMemoryRequest,
  WriteMemoryResult,
} from './types.js';

export interface ElmaOptions {
  /** Where ELMA's API is, e.g. `http://127.0.0.1:8080` (a base path is kept: `https://host/elma`). */
  url: string;
  /** A bearer token (JWT) naming tenant, subject, roles, purposes and clearance; kept private, never in an error. */
  token?: string;
  /** The purpose `recall` and `get` state when a call names none. */
  purpose?: string;
  /** Per attempt, from sending the request to reading the whole answer (default 30,000 ms). */
  timeoutMs?: number;
  /** Retries of an idempotent call (GET) answered 503 with `Retry-After` (default 2). */
  retries?: number;
  /** A longer `Retry-After` is not waited for: the error is thrown at once (default 30,000 ms). */
  maxRetryDelayMs?: number;
  /** Told before each retry, and awaited (to log it, or to count retries). */
  onRetry?: (info: RetryInfo) => void | Promise<void>;
  /** The `fetch` to use (default: the global one, Node 20+). */
  fetch?: typeof fetch;
}

/**
 * An event to remember. `POST /v1/events` with conveniences: `text` for `content: { text }`, and defaults for
 * `occurredAt` (now), `activity` (`agent.note`) and `source` (`{ system: "agent" }`).
 */
export type EventInput = Omit<ApiEvent, 'content' | 'occurredAt' | 'activity' | 'source'> & {
  text?: string;
  content?: ApiEvent['content'];
  occurredAt?: string | Date;
  activity?: string;
  source?: ApiEvent['source'];
};

/** An explicit memory (`POST /v1/memories`), learnt from the events it cites; `text` for `content: { text }`. */
export type MemoryInput = Omit<WriteMemoryRequest, 'content'> & { text?: string; content?: WriteMemoryRequest['content'] };

export type RecallOptions = Omit<RecallRequest, 'query' | 'purpose' | 'filter' | 'kinds'> & {
  purpose?: string;
  /** Narrows the recall (see `RecallFilter`). */
  filter?: RecallFilter;
  /** @deprecated Use `filter.kinds`; giving both is refused (422). */
  kinds?: RecallRequest['kinds'];
};

export interface GetOptions {
  purpose?: string;
  /** The session of a working memory (its owner may omit it). */
  session?: string;
}

export interface ListQuery {
  subject?: string;
  kind?: MemoryKind;
  status?: string;
  /** Where to start: a `nextCursor` of an earlier page. */
  cursor?: string;
  /** Per page (the API's default 50, at most 200). */
  limit?: number;
}

export interface ErasureQuery {
  status?: string;
  cursor?: string;
  limit?: number;
}

/** Erase a data subject's records (a shorthand for `{ scope: { type: "subject", subject }, reason }`). */
export interface SubjectErasure {
  subject: string;
  reason: ErasureReason;
}

export interface WaitOptions {
  /** Between two looks (default 500 ms). */
  pollMs?: number;
  /** Give up after this long, with the last progress in the error (default 120,000 ms). */
  timeoutMs?: number;
}

/** Erasure statuses after which nothing more happens without a person (an approval) or at all. */
const SETTLED = new Set(['completed', 'denied', 'approval_timed_out', 'verification_failed', 'failed', 'awaiting_approval']);

/**
 * ELMA's API for an agent: remember, recall, read, give feedback, list, and ask for an erasure. Every method
 * answers what the API answers (types generated from its OpenAPI document) or throws an `ElmaError` with the
 * RFC 9457 problem.
 */
export class Elma {
  readonly #http: Transport;
  readonly #purpose: string | undefined;

  constructor(options: ElmaOptions) {
    this.#purpose = options.purpose;
    this.#http = new Transport({
      url: options.url,
      token: options.token,
      timeoutMs: options.timeoutMs ?? 30_000,
      retries: options.retries ?? 2,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 30_000,
      onRetry: options.onRetry,
      fetch: options.fetch ?? globalThis.fetch,
    });
  }

  /**
   * Remembers events (one, or up to 1,000 written all or nothing; the same `source.externalId` or
   * `idempotencyKey` again is a no-op answered `duplicate: true`), or, given `{ memory }`, records an explicit
   * memory learnt from events it cites in `sourceEventIds`.
   */
  remember(events: EventInput | EventInput[]): Promise<IngestResult>;
  remember(input: { memory: MemoryInput }): Promise<WriteMemoryResult>;
  remember(input: EventInput | EventInput[] | { memory: MemoryInput }): Promise<IngestResult | WriteMemoryResult> {
    if (!Array.isArray(input) && 'memory' in input) {
      const { text, content, ...memory } = input.memory;
      return this.#http.call('POST', '/v1/memories', { body: { ...memory, content: content ?? { text } } });
    }
    const body = Array.isArray(input) ? { events: input.map(toApiEvent) } : toApiEvent(input);
    return this.#http.call('POST', '/v1/events', { body });
  }

  /**
   * A budgeted, cited context pack for `query`: `items` best first (`rank` 1 is the best), `context` ready to
   * paste into a prompt, in the order `promptOrder` gives (the most important last).
   */
  recall(query: string, options: RecallOptions = {}): Promise<RecallResult> {
    return this.#http.call('POST', '/v1/recall', { body: { ...options, query, purpose: options.purpose ?? this.#purpose } });
  }

  /** One memory with its provenance and status; 404 `MEMORY.NOT_FOUND` alike for unknown and not visible. */
  get(id: string, options: GetOptions = {}): Promise<Memory> {
    return this.#http.call('GET', `/v1/memories/${encodeURIComponent(id)}`, {
      query: { purpose: options.purpose ?? this.#purpose, session: options.session },
    });
  }

  /** Tells ELMA which memories of a recall (by `recallId`) the agent used; packing weighs it. */
  feedback(recallId: string, adopted: string[]): Promise<FeedbackResult> {
    return this.#http.call('POST', `/v1/recall/${encodeURIComponent(recallId)}/feedback`, { body: { adopted } });
  }

  /** The caller's visible memories, page by page (`for await (const page of elma.list({ subject }))`). */
  list(query: ListQuery = {}): AsyncIterable<MemoryPage> {
    return this.#pages<MemoryPage>('/v1/memories', { ...query });
  }

  /** A memory's versions, oldest first, each as the caller may see it. */
  versions(id: string): Promise<MemoryVersions> {
    return this.#http.call('GET', `/v1/memories/${encodeURIComponent(id)}/versions`);
  }

  /** Asks for an erasure (roles compliance or dpo; a data subject for their own records). Runs on; see `erasure`. */
  requestErasure(request: CreateErasureRequest | SubjectErasure): Promise<ErasureProgress> {
    const body = 'scope' in request ? request : { scope: { type: 'subject', subject: request.subject }, reason: request.reason };
    return this.#http.call('POST', '/v1/erasures', { body });
  }

  /** An erasure's progress: status, current step, finished steps, closure size. */
  erasure(id: string): Promise<ErasureProgress> {
    return this.#http.call('GET', `/v1/erasures/${encodeURIComponent(id)}`);
  }

  /** Follows an erasure until it completes, fails or waits for an approval; answers its last progress. */
  async waitForErasure(id: string, options: WaitOptions = {}): Promise<ErasureProgress> {
    const deadline = Date.now() + (options.timeoutMs ?? 120_000);
    for (;;) {
      const progress = await this.erasure(id);
      if (SETTLED.has(progress.status)) return progress;
      if (Date.now() >= deadline) throw new Error(`erasure ${id} still ${progress.status} after ${options.timeoutMs ?? 120_000} ms`);
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
    }
  }

  /** The signed erasure certificate (JSON); verify it offline with `elma verify-certificate`. */
  certificate(id: string): Promise<ErasureCertificate> {
    return this.#http.call('GET', `/v1/erasures/${encodeURIComponent(id)}/certificate`);
  }

  /** The certificate as a PDF for a compliance officer. */
  certificatePdf(id: string): Promise<Uint8Array> {
    return this.#http.call('GET', `/v1/erasures/${encodeURIComponent(id)}/certificate.pdf`, { as: 'bytes' });
  }

  /** The tenant's erasures the caller may see, page by page. */
  erasures(query: ErasureQuery = {}): AsyncIterable<ErasurePage> {
    return this.#pages<ErasurePage>('/v1/erasures', { ...query });
  }

  async *#pages<P extends { nextCursor: string | null }>(path: string, query: Record<string, string | number | undefined>) {
    let cursor = query.cursor;
    do {
      const page: P = await this.#http.call('GET', path, { query: { ...query, cursor } });
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
}

function toApiEvent({ text, content, occurredAt, activity, source, ...event }: EventInput): ApiEvent {
  return {
    ...event,
    content: content ?? { text: text as string },
    occurredAt: occurredAt instanceof Date ? occurredAt.toISOString() : (occurredAt ?? new Date().toISOString()),
    activity: activity ?? 'agent.note',
    source: source ?? { system: 'agent' },
  };
}
