import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { Elma, ElmaError, type RecallResult } from '@elma/client';
import { ErasureReason, Fact, IngestEventInput, MemoryContent, Purpose, RecallFilter, RecallRequest, SessionId } from '@elma/domain';
import { ELMA_VERSION } from '@elma/shared';

/** How a tool call reaches ELMA: a client with the token of whoever called the tool (per session over HTTP). */
export type ClientFor = (extra: { authInfo?: { token: string } }) => Elma;

/** The tools' inputs: the API's own field schemas, so a tool refuses what the API would (before any call). */
const RememberInput = {
  subject: IngestEventInput.shape.subject.describe('Who the memory is about: a customer, a user, a case (an id, e.g. "cust-42").'),
  text: MemoryContent.shape.text.describe('What to remember, in any language.'),
  fact: Fact.optional().describe('A fact to keep as a semantic memory (entity, attribute, value).'),
  purposes: IngestEventInput.shape.purposes.describe('Purposes the memory may be used for (default: the tenant policy).'),
  sensitivity: IngestEventInput.shape.sensitivity,
  occurredAt: IngestEventInput.shape.occurredAt.optional().describe('When it happened (ISO 8601; default now).'),
  session: IngestEventInput.shape.session,
  idempotencyKey: IngestEventInput.shape.idempotencyKey.describe(
    'Sending the same key, content and occurredAt again stores nothing new (give occurredAt with a key).',
  ),
};
const RecallInput = {
  query: RecallRequest.shape.query.describe('What the agent needs to know, in any language.'),
  purpose: Purpose.describe('Why it is asked (one of the token purposes, e.g. "support").'),
  budgetTokens: RecallRequest.shape.budgetTokens,
  filter: RecallFilter.optional().describe('Narrows the recall; it never widens what the caller may see.'),
  kinds: RecallRequest.shape.kinds.describe('Deprecated: use filter.kinds.'),
  session: RecallRequest.shape.session.describe("The caller's session: its working memories are recalled too."),
};
const GetInput = {
  id: z.string().min(1).max(200).describe('A memory id, as recall cites it (e.g. "mem_ep_…").'),
  purpose: Purpose.optional(),
  session: SessionId.optional(),
};
const ForgetInput = {
  subject: IngestEventInput.shape.subject.describe('The data subject whose records are to be erased.'),
  reason: ErasureReason.describe('Why: subject_request, retention, correction or legal.'),
};

/**
 * What each tool answers as structured content: the API's answer as it is, of which the fields a caller relies
 * on are named (loose objects: a field the API adds is passed on, not refused by the client's check).
 */
const RememberOutput = z.looseObject({
  events: z.array(z.looseObject({ id: z.string(), subject: z.string(), duplicate: z.boolean() })),
  position: z.string(),
});
const RecallOutput = z.looseObject({
  recallId: z.string(),
  context: z.string(),
  items: z.array(z.looseObject({ id: z.string(), rank: z.number(), kind: z.string(), text: z.string() })),
  promptOrder: z.array(z.string()),
  usedTokens: z.number(),
  budgetTokens: z.number(),
});
const GetOutput = z.looseObject({ id: z.string(), kind: z.string(), status: z.string(), content: z.looseObject({ text: z.string() }) });
const ForgetOutput = z.looseObject({ requestId: z.string(), status: z.string() });

/**
 * ELMA as MCP tools: remember, recall, get, forget_request. Each call goes to ELMA's API with the caller's
 * token, so the API's policies, audit and quotas apply unchanged; a refusal is a tool error naming the
 * problem code (the agent can read it and act), never a crash of the server.
 */
export function createElmaMcpServer(clientFor: ClientFor): McpServer {
  const server = new McpServer({ name: 'elma', version: ELMA_VERSION });

  server.registerTool(
    'remember',
    {
      title: 'Remember',
      description:
        'Store something the agent learnt about a subject (a customer, a user) in ELMA, governed long-term memory. ' +
        'It becomes an episodic memory, and with `fact` also a semantic one; recall finds it within moments.',
      inputSchema: RememberInput,
      outputSchema: RememberOutput,
    },
    (input, extra) =>
      answer(async () => {
        const { text, fact, ...event } = input;
        const result = await clientFor(extra).remember({
          ...event,
          content: { text, ...(fact ? { fact } : {}) },
          source: { system: 'mcp' },
        });
        const [first] = result.events;
        return [`${first.duplicate ? 'Already remembered' : 'Remembered'} (event ${first.id}).`, result];
      }),
  );

  server.registerTool(
    'recall',
    {
      title: 'Recall',
      description:
        'Ask ELMA what is known about something: a budgeted, policy-checked context pack of memories, each cited ' +
        '(id, source events, times, confidence). The text answer opens with the numbers of the memories best first, ' +
        'then the context, ready to put in a prompt; `filter` narrows the recall to subjects, entities, sessions, sources or times.',
      inputSchema: RecallInput,
      outputSchema: RecallOutput,
      annotations: { readOnlyHint: true },
    },
    ({ query, ...options }, extra) =>
      answer(async () => {
        const result: RecallResult = await clientFor(extra).recall(query, options);
        if (result.items.length === 0) return ['Nothing relevant is remembered (or nothing you may see).', result];
        // The context's own numbers, best first: the context keeps its prompt order (the most important last).
        const best = result.items.map((item) => `[${result.promptOrder.indexOf(item.id) + 1}]`).join(' ');
        return [`Best first: ${best}\n\n${result.context}`, result];
      }),
  );

  server.registerTool(
    'get',
    {
      title: 'Get a memory',
      description: 'Read one memory by id (as recall cites it), with its provenance, status and validity.',
      inputSchema: GetInput,
      outputSchema: GetOutput,
      annotations: { readOnlyHint: true },
    },
    ({ id, ...options }, extra) =>
      answer(async () => {
        const memory = await clientFor(extra).get(id, options);
        return [`${memory.kind} memory ${memory.id} (${memory.status}): ${memory.content.text}`, memory];
      }),
  );

  server.registerTool(
    'forget_request',
    {
      title: 'Request erasure of a data subject',
      description:
        "Ask ELMA to erase every record of a data subject (GDPR right to erasure). Needs a compliance or dpo token, or the subject's own. " +
        'The erasure runs as a durable workflow and ends with a signed certificate; this answers its request id and status.',
      inputSchema: ForgetInput,
      outputSchema: ForgetOutput,
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    ({ subject, reason }, extra) =>
      answer(async () => {
        const progress = await clientFor(extra).requestErasure({ subject, reason });
        return [`Erasure ${progress.requestId} is ${progress.status}.`, progress];
      }),
  );

  return server;
}

/** A tool result: readable text plus the API's answer as structured content, or a tool error naming the problem. */
async function answer(work: () => Promise<[string, object]>): Promise<CallToolResult> {
  try {
    const [text, structured] = await work();
    return { content: [{ type: 'text', text }], structuredContent: structured as Record<string, unknown> };
  } catch (error) {
    if (!(error instanceof ElmaError)) throw error;
    // No structuredContent: a client checks it against the tool's output schema. The problem goes in _meta.
    const reference = error.requestId ? `, request id ${error.requestId}` : '';
    return {
      isError: true,
      content: [{ type: 'text', text: `ELMA refused: ${error.code} (HTTP ${error.status}${reference}): ${error.detail}` }],
      _meta: { 'elma/problem': { ...error.problem } },
    };
  }
}
