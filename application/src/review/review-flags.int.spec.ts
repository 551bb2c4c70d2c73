import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REVIEW_THRESHOLDS, episodicIdFor, semanticIdFor, streams, type Principal, type RecordedEvent } from '@elma/domain';
import type { Elma } from '@elma/runtime';
import { REVIEW_ACTOR } from './review-flags';
import { scratchElma } from '../testing/scratch-elma';

/**
 * The W5 defences end to end below the API: events ingested into a real
 * SQLite data folder, decided by the projection, and the flags its
 * detectors raise in `reviews-{tenant}` (with their audit entries).
 */
const agent = (tenant: string): Principal => ({ tenant, sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' });

let n = 0;
const event = (
  channel: string,
  system: string,
  text: string,
  fact?: { entity: string; attribute: string; value: string; validFrom?: string },
) => ({
  subject: 'cust-1',
  occurredAt: new Date(Date.UTC(2026, 2, 1, 0, n++)).toISOString(),
  activity: 'document.update',
  content: { text, ...(fact ? { fact } : {}) },
  source: { system, channel, externalId: `x-${n}` },
  purposes: ['support'],
});
const refund = (channel: string, system: string, value: string, validFrom: string) =>
  event(channel, system, `ACME refund window is ${value}`, { entity: 'ACME', attribute: 'refund window', value, validFrom });

describe('review flags raised by the projection', () => {
  const scratch = scratchElma('reviews');
  let elma: Elma;
  const ingest = async (tenant: string, events: unknown[]) => {
    const result = await elma.ingest.ingest(agent(tenant), { events });
    await elma.runner.waitFor(BigInt(result.position));
    return result.events.map((e) => e.id);
  };
  const flags = (tenant: string) => elma.reviews.all(tenant);

  beforeAll(() => {
    elma = scratch.elma;
  });

  it('keeps a later external contradiction of a certified fact out of the current answer, and flags it', async () => {
    const [policy] = await ingest('acme', [refund('system', 'policy-portal', '30 days', '2026-01-01T00:00:00Z')]);
    const [poison] = await ingest('acme', [refund('web', 'web-scrape', '90 days', '2026-03-01T00:00:00Z')]);

    expect((await elma.index.get('acme', semanticIdFor(policy)))?.record).toMatchObject({ status: 'active', validTo: null });
    expect((await elma.index.get('acme', semanticIdFor(poison)))?.record).toMatchObject({
      status: 'superseded',
      resolution: { rule: 'source_authority', against: [semanticIdFor(policy)] },
    });
    expect(await flags('acme')).toEqual([
      expect.objectContaining({
        id: expect.stringMatching(/^rf_/),
        kind: 'trust_conflict',
        rule: 'lower_trust_contradiction',
        eventIds: [poison],
        recordIds: [semanticIdFor(poison), semanticIdFor(policy)],
        status: 'open',
      }),
    ]);
  });

  it('flags a source system seen at another trust tier than before', async () => {
    await ingest('acme', [event('email', 'kb', 'Newsletter: opening hours unchanged.')]);
    const [claimed] = await ingest('acme', [event('system', 'kb', 'Opening hours are 9 to 5.')]);
    expect((await flags('acme')).filter((f) => f.kind === 'trust_shift')).toEqual([
      expect.objectContaining({
        rule: 'source_tier_changed',
        sourceSystem: 'kb',
        eventIds: [claimed],
        recordIds: [episodicIdFor(claimed)],
      }),
    ]);
  });

  it('flags a burst of writes about one entity and attribute once', async () => {
    const burst = Array.from({ length: 8 }, () =>
      event('chat', 'chat', 'ACME delivery fee is 0', {
        entity: 'ACME',
        attribute: 'delivery fee',
        value: '0',
        validFrom: '2026-03-02T00:00:00Z',
      }),
    );
    const ids = await ingest('acme', burst);
    const bursts = (await flags('acme')).filter((f) => f.kind === 'write_burst');
    expect(bursts).toHaveLength(1);
    expect(bursts[0]).toMatchObject({ rule: 'fact_burst', count: 6 });
    expect(bursts[0].eventIds.every((id) => ids.includes(id))).toBe(true);
  });

  it('raises each flag once: the same events decided again raise nothing new', async () => {
    const before = await flags('acme');
    const events: RecordedEvent[] = [];
    for await (const e of elma.log.readAll({ filter: { streamNamePrefix: [streams.eventsOfTenant('acme')] } })) events.push(e);
    await elma.projection.apply(events);
    expect(await flags('acme')).toEqual(before);
  });

  it('records every raise in the audit trail, by ids, and keeps content out of the flags', async () => {
    const raised = await flags('acme');
    const entries: { actor: string; resourceIds: string[]; decision: { rule: string } }[] = [];
    for await (const e of elma.log.readStream(streams.audit('acme'))) entries.push(e.data as (typeof entries)[number]);
    for (const flag of raised) {
      expect(
        entries.some((a) => a.actor === REVIEW_ACTOR && a.resourceIds[0] === flag.id && a.decision.rule.startsWith('review.raise.')),
      ).toBe(true);
    }
    let stored = '';
    for await (const e of elma.log.readStream(streams.reviews('acme'))) stored += JSON.stringify(e.data);
    for (const content of ['ACME', 'refund', '90 days', '30 days', 'cust-1', 'Opening hours']) expect(stored).not.toContain(content);
  });

  it('raises nothing for a busy chat session and a routine update by the same certified source (Chinese and English)', async () => {
    const turns = Array.from({ length: 60 }, (_, i) =>
      event('chat', 'chat', i % 2 ? `客户问第${i}个问题：发票什么时候到？` : `Customer asks question ${i} about the invoice.`),
    );
    await ingest('calm', turns);
    await ingest('calm', [refund('system', 'policy-portal', '30 days', '2026-01-01T00:00:00Z')]);
    await ingest('calm', [refund('system', 'policy-portal', '45 days', '2026-03-01T00:00:00Z')]);
    await ingest('calm', [
      event('system', 'policy-portal', '退款政策更新：退款期限为45天。', { entity: 'ACME', attribute: '退款期限', value: '45天' }),
    ]);
    expect(await flags('calm')).toEqual([]);
  });

  it('raises nothing for a consolidation summary that only repeats its sources', async () => {
    const turns = [
      'The fee is 3.5 euros a month, billed by Harwick Logistics.',
      '客户说发票在2026-03-01寄出，金额为1,200元。',
      'Orders above 1000 units ship free from the 「上海」 depot.',
      'I will call back on Monday about invoice 4471.',
      // Several commitments in one session: consolidation extracts a fact of each, which is no burst of writes.
      'I will send the signed contract tomorrow.',
      'I will check the delivery address.',
      'I will ask finance about the refund.',
      '我会明天发送合同。',
      '我会联系仓库确认库存。',
      '我们会在周五前完成付款。',
    ].map((text, i) => ({
      ...event('chat', 'chat', text),
      subject: 'cust-2',
      occurredAt: `2026-03-05T10:${String(i).padStart(2, '0')}:00Z`,
    }));
    const [first] = await ingest('calm', turns);
    const result = await elma.consolidation.consolidate('calm', episodicIdFor(first));
    await elma.runner.waitFor(await elma.log.headPosition());
    expect(result.summaries).toBeGreaterThan(0);
    expect(result.facts).toBeGreaterThan(DEFAULT_REVIEW_THRESHOLDS.maxFactsPerKey);
    expect(await flags('calm')).toEqual([]);
  });
});
