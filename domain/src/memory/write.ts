import { z } from 'zod';
import { WORKING_TTL_MAX_SECONDS } from './kinds';
import { MemoryContent, MemoryKind, Purpose, RetentionClass, Sensitivity } from './record';

const IsoDate = z.iso.datetime({ offset: true });

/** A session or task id: no control characters. */
export const SessionId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}]+$/u, 'contains no control characters');

export interface StructureIssue {
  path: (string | number)[];
  message: string;
}

/**
 * What a memory of `kind` must carry beyond its text: a procedural memory its
 * procedure, a relational one its edge. Neither structure belongs to another
 * long-term kind, where nothing would read it; a working memory may hold
 * either, for a promotion to that kind to keep.
 */
export function structureIssues(kind: MemoryKind, content: MemoryContent): StructureIssue[] {
  const issues: StructureIssue[] = [];
  const holds = (structure: MemoryKind) => kind === structure || kind === 'working';
  if (kind === 'procedural' && !content.procedure)
    issues.push({ path: ['content', 'procedure'], message: 'a procedural memory states its procedure (name, version, steps)' });
  if (!holds('procedural') && content.procedure)
    issues.push({ path: ['content', 'procedure'], message: 'only procedural and working memories state a procedure' });
  if (kind === 'relational' && !content.relation)
    issues.push({ path: ['content', 'relation'], message: 'a relational memory states its relation (from, relation, to)' });
  if (!holds('relational') && content.relation)
    issues.push({ path: ['content', 'relation'], message: 'only relational and working memories state a relation' });
  return issues;
}

/** `POST /v1/memories`: an explicit memory, which must name the events it was learnt from. */
export const WriteMemoryRequest = z
  .strictObject({
    kind: MemoryKind.default('semantic'),
    /** `text` is the searchable rendering; `procedure` (procedural) and `relation` (relational) carry the structure. */
    content: MemoryContent,
    sourceEventIds: z.array(z.uuid()).min(1).max(100),
    subject: z.string().min(1).max(200).optional(),
    sensitivity: Sensitivity.default('internal'),
    purposes: z.array(Purpose).min(1).max(20).optional(),
    validFrom: IsoDate.optional(),
    validTo: IsoDate.optional(),
    confidence: z.number().min(0).max(1).default(0.8),
    /** Default `standard`; a working memory is always `session`. */
    retention: RetentionClass.optional(),
    /**
     * Ignored for procedural memories, whose identity is their name and
     * version: writing the same version again is already idempotent.
     */
    idempotencyKey: z.string().min(1).max(200).optional(),
    /**
     * An explicit correction (roles admin, dpo or reviewer): it prevails over
     * any fact it contradicts, whatever their sources, times or confidences.
     */
    correction: z.boolean().optional(),
    /**
     * Optimistic concurrency on the memory's stream: the version the caller
     * believes is current (0: the memory must not exist yet). A mismatch is a
     * `EVENT_LOG.WRONG_EXPECTED_VERSION` conflict and nothing is written.
     */
    expectedVersion: z.number().int().min(0).optional(),
    /** The session or task a working memory belongs to (required for, and only for, kind `working`). */
    session: SessionId.optional(),
    /** How long a working memory is recalled: default 3,600 s, at most 7 days. */
    ttlSeconds: z.number().int().min(1).max(WORKING_TTL_MAX_SECONDS).optional(),
  })
  .superRefine((request, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    for (const { path, message } of structureIssues(request.kind, request.content)) issue(path, message);
    if (request.kind === 'working') {
      if (request.session === undefined) issue(['session'], 'a working memory names its session');
      if (request.retention !== undefined && request.retention !== 'session')
        issue(['retention'], 'a working memory has retention session');
    } else {
      if (request.session !== undefined) issue(['session'], 'only working memories belong to a session');
      if (request.ttlSeconds !== undefined) issue(['ttlSeconds'], 'only working memories have a TTL');
    }
  });
export type WriteMemoryRequest = z.infer<typeof WriteMemoryRequest>;

/**
 * `POST /v1/memories/:id/promote`: keeps what a working memory holds beyond
 * its session, as a new record of another kind that cites it as its parent.
 */
export const PromoteMemoryRequest = z.strictObject({
  kind: MemoryKind.exclude(['working']).default('semantic'),
  /** Never above the working memory's own confidence; default: the same. */
  confidence: z.number().min(0).max(1).optional(),
  retention: RetentionClass.exclude(['session']).default('standard'),
  /** The working memory's session: only there (or by its owner) can it be read and promoted. */
  session: SessionId.optional(),
});
export type PromoteMemoryRequest = z.infer<typeof PromoteMemoryRequest>;
