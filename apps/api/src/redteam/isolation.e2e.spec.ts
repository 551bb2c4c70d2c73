import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { startTestApp, type TestApp } from '../testing';
import { RedTeam, pool } from './harness';

/**
 * Red team: hostile and curious requests against three tenants, over real
 * HTTP, counting every response that shows something its caller must not
 * see. Markers are unique strings planted in canary records; a leak is any
 * response body containing a marker or memory id the caller is not entitled to.
 */
const TENANTS = ['acme', 'globex', 'initech'] as const;
const CANARIES_PER_TENANT = 24;

interface Canary {
  tenant: string;
  marker: string;
  text: string;
  id: string;
  sensitivity: 'internal' | 'confidential' | 'restricted';
  purpose: 'support' | 'hr';
  owner: string;
}

let t: TestApp;
let red: RedTeam;
const canaries: Canary[] = [];

const token = (tenant: string, name: string, claims: Partial<Principal>) => red.token(tenant, name, claims);
const send = async (tokenValue: string, method: string, path: string, body?: unknown) =>
  red.send({ token: tokenValue, method, path, body });
const probe = (label: string, tokenValue: string, method: string, path: string, body: unknown, forbidden: Canary[]) =>
  red.probe(
    label,
    { token: tokenValue, method, path, body },
    forbidden.map((c) => ({ id: c.id, marker: c.marker, label: `${c.tenant}/${c.id} ${c.sensitivity}/${c.purpose}` })),
  );

beforeAll(async () => {
  t = await startTestApp();
  red = new RedTeam(t, 'isolation');
  for (const tenant of TENANTS) {
    const writer = await token(tenant, 'writer', { roles: ['agent'], purposes: ['support', 'hr'], clearance: 'restricted' });
    const planned = Array.from({ length: CANARIES_PER_TENANT }, (_, i) => {
      const marker = `canary${tenant}${i}x${Math.random().toString(36).slice(2, 8)}`;
      const chinese = i % 2 === 0;
      return {
        tenant,
        marker,
        text: chinese ? `金丝雀记录 ${marker} 客户交付风险 合同续约` : `Canary record ${marker} about delivery risk and contract renewal`,
        sensitivity: (['internal', 'confidential', 'restricted'] as const)[i % 3],
        purpose: (i % 4 === 3 ? 'hr' : 'support') as Canary['purpose'],
        owner: i % 3 === 2 ? `owner-${tenant}` : `cust-${tenant}-${i}`,
      };
    });
    const result = await send(writer, 'POST', '/v1/events', {
      events: planned.map((c) => ({
        subject: c.owner,
        occurredAt: '2026-11-20T10:00:00Z',
        activity: 'chat.turn',
        content: { text: c.text },
        source: { system: 'crm', channel: 'chat' },
        sensitivity: c.sensitivity,
        purposes: [c.purpose],
      })),
    });
    expect(result.status, result.text).toBe(202);
    const ids = (JSON.parse(result.text) as { events: { id: string }[] }).events.map((e) => `mem_ep_${e.id}`);
    planned.forEach((c, i) => canaries.push({ ...c, id: ids[i] }));
  }
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
}, 120_000);

afterAll(async () => {
  await (red ? red.close() : t?.close());
});

describe('tenant isolation and policy under hostile probes', () => {
  it('leaks nothing across tenants, purposes or clearances in at least 10,000 probes', async () => {
    const tasks: (() => Promise<unknown>)[] = [];
    for (const attacker of TENANTS) {
      const agent = await token(attacker, 'agent', { roles: ['agent'], purposes: ['support'], clearance: 'internal' });
      const cleared = await token(attacker, 'cleared', { roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
      const legal = await token(attacker, 'legal', { roles: ['legal'], purposes: ['support'], clearance: 'restricted' });
      const foreign = canaries.filter((c) => c.tenant !== attacker);
      const own = canaries.filter((c) => c.tenant === attacker);
      // What an internal-clearance support agent of this tenant must not see of its own tenant.
      const aboveClearance = own.filter((c) => c.sensitivity !== 'internal' || c.purpose !== 'support');
      // Restricted records belong to their owner (and dpo/legal) only; hr records never serve support.
      const notForCleared = own.filter((c) => c.purpose !== 'support' || c.sensitivity === 'restricted');

      for (const victim of foreign) {
        for (const [who, tok] of [
          ['agent', agent],
          ['cleared', cleared],
          ['legal', legal],
        ] as const) {
          // BM25 probes with the victim's marker, and kNN probes with its exact text (hence its exact vector).
          tasks.push(() => probe(`bm25/${who}`, tok, 'POST', '/v1/recall', { query: victim.marker, purpose: 'support' }, foreign));
          tasks.push(() =>
            probe(`knn/${who}`, tok, 'POST', '/v1/recall', { query: victim.text, purpose: 'support', budgetTokens: 4000 }, foreign),
          );
          // Id guessing.
          tasks.push(() => probe(`get/${who}`, tok, 'GET', `/v1/memories/${victim.id}`, undefined, foreign));
          // GraphQL field probing.
          tasks.push(() =>
            probe(
              `graphql/${who}`,
              tok,
              'POST',
              '/graphql',
              { query: `{ memory(id: "${victim.id}") { id text subject provenance { sourceEventIds } } }` },
              foreign,
            ),
          );
          tasks.push(() =>
            probe(
              `graphql-recall/${who}`,
              tok,
              'POST',
              '/graphql',
              { query: `{ recall(input: {query: "${victim.marker}", purpose: "support"}) { items { id text } } }` },
              foreign,
            ),
          );
          // Naming the victim's tenant in the body.
          tasks.push(() =>
            probe(
              `tenant-field/${who}`,
              tok,
              'POST',
              '/v1/recall',
              { tenant: victim.tenant, query: victim.marker, purpose: 'support' },
              foreign,
            ),
          );
        }
        // Purpose escalation: the token carries only support.
        tasks.push(() => probe('purpose-escalation', agent, 'POST', '/v1/recall', { query: victim.marker, purpose: 'hr' }, foreign));
      }
      for (const target of own) {
        // Clearance and purpose limits inside the tenant.
        tasks.push(() => probe('clearance', agent, 'POST', '/v1/recall', { query: target.marker, purpose: 'support' }, aboveClearance));
        tasks.push(() => probe('clearance-get', agent, 'GET', `/v1/memories/${target.id}`, undefined, aboveClearance));
        tasks.push(() =>
          probe('restricted-owner', cleared, 'POST', '/v1/recall', { query: target.text, purpose: 'support' }, notForCleared),
        );
        tasks.push(() => probe('purpose-limit', cleared, 'POST', '/v1/recall', { query: target.marker, purpose: 'hr' }, own));
      }
      // Oversized and malformed filters.
      const hostile: unknown[] = [
        { query: 'x'.repeat(5000), purpose: 'support' },
        { query: 'risk', purpose: 'support', kinds: ['episodic', 'everything'] },
        { query: 'risk', purpose: 'support', asOf: 'yesterday' },
        { query: 'risk', purpose: 'support', budgetTokens: 1e12 },
        { query: 'risk', purpose: 'support', afterPosition: '-1' },
        { query: 'risk', purpose: 'support', filter: { tenant: 'globex' } },
        { query: { $ne: null }, purpose: 'support' },
        { query: "' OR 1=1 --", purpose: 'support' },
        { query: '" OR "', purpose: 'support' },
        { query: 'NEAR(a b) OR *', purpose: 'support' },
        '{"query": "risk", "purpose": "support",',
        [],
      ];
      for (let round = 0; round < 20; round++) {
        for (const body of hostile) tasks.push(() => probe('malformed', agent, 'POST', '/v1/recall', body, foreign));
      }
    }
    // Repeat the whole set until there are at least 10,000 probes.
    const rounds = Math.ceil(10_000 / tasks.length);
    const all = Array.from({ length: rounds }, () => tasks).flat();
    await pool(all, 8, (task) => task());

    expect(red.probes).toBeGreaterThanOrEqual(10_000);
    expect(red.leaks.slice(0, 5)).toEqual([]);
    expect(red.serverErrors.slice(0, 5)).toEqual([]);
  }, 600_000);

  it('answers the same for another tenant’s id as for an id that does not exist', async () => {
    const agent = await token('acme', 'agent', { roles: ['agent'], purposes: ['support'], clearance: 'internal' });
    const victim = canaries.find((c) => c.tenant === 'globex')!;
    const foreign = await send(agent, 'GET', `/v1/memories/${victim.id}`);
    const missing = await send(agent, 'GET', `/v1/memories/${victim.id.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}`);
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    const shape = (text: string) => {
      const { instance: _i, requestId: _r, detail, ...rest } = JSON.parse(text) as Record<string, string>;
      return { ...rest, detail: detail.replace(/mem_\S+/, '<id>') };
    };
    expect(shape(foreign.text)).toEqual(shape(missing.text));
  });

  it('refuses a body that names another tenant with AUTH.TENANT_MISMATCH', async () => {
    const agent = await token('acme', 'agent', { roles: ['agent'], purposes: ['support'], clearance: 'internal' });
    const response = await send(agent, 'POST', '/v1/recall', { tenant: 'globex', query: 'risk', purpose: 'support' });
    expect(response.status).toBe(403);
    expect(JSON.parse(response.text).code).toBe('AUTH.TENANT_MISMATCH');
    const own = await send(agent, 'POST', '/v1/recall', { tenant: 'acme', query: 'risk', purpose: 'support' });
    expect(own.status).toBe(200);
  });
});
