import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskModelFromEnv } from './task-model';
import { fixtureWorkload } from './testing';

/**
 * A real HTTP server speaking the chat-completions shape: it "answers" with
 * the line of the context that mentions the question's subject, and
 * "grades" by comparing the expected answer with the answer given.
 */
let server: Server;
let baseUrl: string;
const seen: { authorization?: string; model?: string }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      if (request.url !== '/v1/chat/completions') {
        response.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: string; messages: { role: string; content: string }[] };
      seen.push({ authorization: request.headers.authorization, model: body.model });
      const user = body.messages.find((m) => m.role === 'user')!.content;
      let content: string;
      if (user.startsWith('Memory context:')) {
        const context = user.slice('Memory context:\n'.length, user.indexOf('\n\nQuestion:'));
        content = context.includes('王芳') ? '负责人是王芳' : 'unknown';
      } else {
        const expected = /Expected answer: (.*)\n/.exec(user)![1];
        const given = /Answer given: (.*)$/s.exec(user)![1];
        content = given.includes(expected) ? 'yes' : 'no';
      }
      if (user.includes('FAIL')) {
        response.writeHead(500).end();
        return;
      }
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('task-success hook', () => {
  const probe = fixtureWorkload().probes.find((p) => p.id === 'recall-zh')!;

  it('given no ELMA_EVAL_MODEL_URL, then there is no model ("needs model")', () => {
    expect(taskModelFromEnv({})).toBeUndefined();
  });

  it('given a model server, when the context holds the answer, then the task succeeds; without it, it fails', async () => {
    const model = taskModelFromEnv({ ELMA_EVAL_MODEL_URL: baseUrl, ELMA_EVAL_MODEL: 'judge-1', ELMA_EVAL_MODEL_KEY: 'k-123' })!;
    expect(await model.succeeds(probe, '- (2026-03-02) 猎鹰项目的负责人是王芳。')).toBe(true);
    expect(await model.succeeds(probe, '- (2026-03-02) nothing relevant')).toBe(false);
    expect(seen.at(-1)).toEqual({ authorization: 'Bearer k-123', model: 'judge-1' });
  });

  it('given a server error, then the hook throws with the status and no content', async () => {
    const model = taskModelFromEnv({ ELMA_EVAL_MODEL_URL: `${baseUrl}/v1` })!;
    await expect(model.succeeds(probe, 'FAIL 王芳')).rejects.toThrow(/HTTP 500$/);
  });
});
