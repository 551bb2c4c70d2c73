import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { transform } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignedCertificate } from '@elma/infra';
import { roleTokens, startTestApp, type TestApp } from '../../../apps/api/src/testing';
import { startMcpHttp } from '../../../apps/cli/src/mcp/testing';

/**
 * The README's "Use from your agent" snippets, run as a reader would: the TypeScript ones as plain Node ESM in a
 * folder outside this repository with the built @elma/client installed there (so they also prove the package
 * stands alone), the MCP configurations by the MCP SDK's own client, against a started ELMA.
 */
const repo = join(import.meta.dirname, '..', '..', '..');
const section = (() => {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Use from your agent\n');
  return readme.slice(start, readme.indexOf('\n## ', start + 1));
})();
const snippets = new Map([...section.matchAll(/```(?:ts|json) snippet=([\w-]+)\n([\s\S]*?)```/g)].map((m) => [m[1], m[2]]));

const run = promisify(execFile);
let t: TestApp;
let tokens: Record<string, string>;
let outside: string;

beforeAll(async () => {
  t = await startTestApp({ temporal: {} });
  tokens = await roleTokens(t, ['agent', 'dpo']);
  outside = mkdtempSync(join(tmpdir(), 'elma-agent-'));
  // The package as `npm run build -w @elma/client` makes it, installed where no node_modules of this repository is above.
  const installed = join(outside, 'node_modules', '@elma', 'client');
  await run(
    process.execPath,
    [
      join(repo, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      'clients/typescript/tsconfig.build.json',
      '--outDir',
      join(installed, 'dist'),
    ],
    {
      cwd: repo,
    },
  );
  cpSync(join(repo, 'clients', 'typescript', 'package.json'), join(installed, 'package.json'));
}, 180_000);
afterAll(async () => {
  await t?.close();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

/** Runs a TypeScript snippet with plain Node (types stripped) in the folder outside the repository. */
async function runTs(name: string, token: string): Promise<string> {
  const source = snippets.get(name);
  expect(source, `README snippet ${name}`).toBeDefined();
  const { code } = await transform(source!, { loader: 'ts', format: 'esm', target: 'node20' });
  const file = join(outside, `${name}.mjs`);
  writeFileSync(file, code);
  // Asynchronously: the ELMA it talks to runs in this process.
  const result = await run(process.execPath, [file], {
    cwd: outside,
    env: { PATH: process.env.PATH ?? '', ELMA_URL: t.url, ELMA_TOKEN: token },
    timeout: 120_000,
  }).catch((error: { code?: number; stderr?: string }) => error);
  expect('code' in result && result.code, (result as { stderr?: string }).stderr).toBeFalsy();
  return (result as { stdout: string }).stdout;
}

const text = (result: CallToolResult) => result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const config = (name: string) => JSON.parse(snippets.get(name) ?? 'null').mcpServers.elma;

/** The four tools are listed, and `recall` finds what the agent snippet remembered. */
async function expectToolsAnswer(client: Client): Promise<void> {
  expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['forget_request', 'get', 'recall', 'remember']);
  const answer = (await client.callTool({ name: 'recall', arguments: { query: 'contract renews', purpose: 'support' } })) as CallToolResult;
  expect(answer.isError, text(answer)).toBeFalsy();
  expect(text(answer)).toContain('ACME confirmed the contract renews in March');
}

describe('README: Use from your agent', () => {
  it('has the TypeScript and MCP snippets', () => {
    expect([...snippets.keys()]).toEqual(['agent', 'dpo', 'listing', 'mcp-stdio', 'mcp-http']);
  });

  it('TypeScript: remember, recall, feedback, get, an explicit memory, and an ElmaError', async () => {
    const out = await runTs('agent', tokens.agent);
    expect(out).toContain('王先生说交付风险很高');
    expect(out).toMatch(/episodic active \[ '[0-9a-f-]+' \]/);
    expect(out).toMatch(/403 RECALL\.PURPOSE_NOT_PERMITTED \S+/);
  });

  it('MCP over stdio: the configuration as written starts `elma mcp`, whose tools answer', async () => {
    const { command, args, env } = config('mcp-stdio');
    const transport = new StdioClientTransport({
      command,
      args: args.map((arg: string) => arg.replace('/path/to/elma', repo)),
      env: { ...process.env, ...env, ELMA_URL: t.url, ELMA_TOKEN: tokens.agent } as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'readme', version: '1.0.0' });
    await client.connect(transport);
    try {
      await expectToolsAnswer(client);
    } finally {
      await client.close();
    }
  });

  it('MCP over streamable HTTP: the configuration as written reaches `elma mcp --http` with its bearer token', async () => {
    const { url: configured, headers } = config('mcp-http');
    const server = await startMcpHttp({ ...(process.env as Record<string, string>), ELMA_URL: t.url });
    const client = new Client({ name: 'readme', version: '1.0.0' });
    try {
      const url = new URL(configured);
      url.port = new URL(server.url).port;
      const authorization = headers.Authorization.replace('<token from elma token>', tokens.agent);
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: authorization } } }));
      await expectToolsAnswer(client);
    } finally {
      await client.close();
      await server.stop();
    }
  });

  it('TypeScript: a dpo erases a data subject and keeps the certificate', async () => {
    const out = await runTs('dpo', tokens.dpo);
    // The closure follows lineage: the episodic memory and the explicit one the agent snippet learnt from it.
    expect(out.trim()).toBe('completed 2');
    const certificate = JSON.parse(readFileSync(join(outside, 'cert.json'), 'utf8'));
    expect(certificate.certificate).toMatchObject({ tenant: 'acme', request: expect.objectContaining({ reason: 'subject_request' }) });
    const keys = await (await fetch(`${t.url}/.well-known/elma-keys`)).json();
    expect(verifySignedCertificate(certificate, keys)).toMatchObject({ ok: true });
  });

  it('TypeScript: listing pages and versions', async () => {
    const out = await runTs('listing', tokens.agent);
    // The agent snippet's fact about ACME, as its semantic memory (runs after it: the tests of this file run in order).
    expect(out).toMatch(/^mem_se_\S+ .*March/m);
    expect(out.trim().split('\n').at(-1)).toBe('1');
  });
});
