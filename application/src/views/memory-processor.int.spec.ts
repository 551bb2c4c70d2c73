import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { streams, type Principal, type RecordedEvent } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Elma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { memoryVersionAppends } from '../memory/memory-events';
import { ORIGIN, PROCESSOR_ORIGIN } from './memory-processor';

const who: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };

const fact = (n: number, value: string) => ({
  subject: 'cust-1',
  occurredAt: new Date(Date.UTC(2026, 10, 1, 0, n)).toISOString(),
  activity: 'chat.turn',
  content: { text: `Moved to ${value}`, fact: { entity: 'cust-1', attribute: 'city', value } },
  source: { system: 'crm', externalId: `ext-${n}` },
  purposes: ['support'],
});

describe('the processor and the views, apart', () => {
  let elma: Elma | undefined;
  let dir = '';
  const open = async () => {
    dir = mkdtempSync(join(tmpdir(), 'elma-processor-'));
    elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger });
    return elma;
  };
  const read = async (elma: Elma, prefix: string) => {
    const events: RecordedEvent[] = [];
    for await (const event of elma.log.readAll({ filter: { streamNamePrefix: [prefix] } })) events.push(event);
    return events;
  };
  afterEach(async () => {
    await elma?.close();
    elma = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('the processor appends its revisions, not the first versions it extracts, and never writes the index; deciding again appends nothing', async () => {
    const elma = await open();
    await elma.ingest.ingest(who, { events: [fact(0, 'Paris'), fact(1, 'Berlin')] });
    const ingested = await read(elma, streams.eventsOfTenant('acme'));

    const { records } = await elma.projection.processor.derive('acme', ingested);
    const revisions = await elma.projection.processor.settle('acme', [...records.values()]);

    // Two episodic and two semantic memories, and the revision the later fact calls for on the earlier one
    // and on the episode that stated it.
    expect(records.size).toBe(4);
    expect(revisions.map((r) => [r.kind, r.version])).toEqual([
      ['semantic', 2],
      ['episodic', 2],
    ]);
    // The four first versions are the extraction rule's function of their events: the log holds the events.
    const memoryEvents = await read(elma, streams.memoriesOfTenant('acme'));
    expect(memoryEvents.map((e) => e.metadata.version)).toEqual([2, 2]);
    expect(memoryEvents.every((e) => e.metadata[ORIGIN] === PROCESSOR_ORIGIN)).toBe(true);
    expect(await elma.index.count('acme')).toBe(0);

    const head = await elma.log.headPosition();
    await elma.projection.processor.derive('acme', ingested);
    await elma.projection.processor.settle('acme', [...records.values()]);
    expect(await elma.log.headPosition()).toBe(head);
  });

  it('a rebuild indexes what the log says (first versions extracted from the events, then the revisions) and appends nothing', async () => {
    const elma = await open();
    await elma.runner.start();
    const written = await elma.ingest.ingest(who, { events: [fact(0, 'Paris'), fact(1, 'Berlin')] });
    await elma.runner.waitFor(BigInt(written.position));
    await elma.runner.waitFor(await elma.log.headPosition());
    const revised = (await read(elma, streams.memoriesOfTenant('acme'))).find((e) => e.metadata.version === 2)!;
    const live = await elma.index.get('acme', String(revised.metadata.memoryId));
    expect(live?.record.version).toBe(2);
    const head = await elma.log.headPosition();
    const ids = written.events.flatMap((e) => [`mem_ep_${e.id}`, `mem_se_${e.id}`]);
    const before = await Promise.all(ids.map(async (id) => (await elma.index.get('acme', id))?.record));
    expect(before.map((r) => r?.version)).toEqual([2, 2, 1, 1]);

    await elma.views.drop('acme');
    expect(await elma.views.replay('acme')).toMatchObject({ memories: 4 });

    expect(await elma.log.headPosition()).toBe(head);
    expect(await Promise.all(ids.map(async (id) => (await elma.index.get('acme', id))?.record))).toEqual(before);
  });

  it('a log of format 2, whose first versions were appended, is projected and rebuilt to the same records as before', async () => {
    const elma = await open();
    const written = await elma.ingest.ingest(who, { events: [fact(0, 'Paris'), fact(1, 'Berlin')] });
    // What the processor of format 2 appended for these events: their extracted first versions.
    const { records } = await elma.projection.processor.derive('acme', await read(elma, streams.eventsOfTenant('acme')));
    await elma.log.appendMany(
      await memoryVersionAppends(elma.sealer, 'acme', [...records.values()], { metadata: { [ORIGIN]: PROCESSOR_ORIGIN } }),
    );
    await elma.runner.start();
    await elma.runner.waitFor(await elma.log.headPosition());
    const ids = written.events.flatMap((e) => [`mem_ep_${e.id}`, `mem_se_${e.id}`]);
    const live = await Promise.all(ids.map(async (id) => (await elma.index.get('acme', id))?.record));
    expect(live.map((r) => r?.version)).toEqual([2, 2, 1, 1]);

    await elma.views.drop('acme');
    await elma.views.replay('acme');

    expect(await Promise.all(ids.map(async (id) => (await elma.index.get('acme', id))?.record))).toEqual(live);
  });

  it('a record erased on its own (its event kept) is derived again neither by the live pass nor by a rebuild', async () => {
    const elma = await open();
    await elma.runner.start();
    const written = await elma.ingest.ingest(who, { events: [fact(0, 'Paris')] });
    await elma.runner.waitFor(BigInt(written.position));
    const [episode, semantic] = [`mem_ep_${written.events[0].id}`, `mem_se_${written.events[0].id}`];
    // What an erasure does to a record whose event a hold keeps (through a held sibling): purge and shred it alone.
    await elma.index.purge('acme', [episode]);
    await elma.vault.shred('acme', [episode]);
    const ingested = await read(elma, streams.eventsOfTenant('acme'));

    expect([...(await elma.projection.processor.derive('acme', ingested)).records.keys()]).toEqual([semantic]);
    await elma.views.drop('acme');
    await elma.views.replay('acme');

    expect(await elma.index.get('acme', episode)).toBeUndefined();
    expect((await elma.index.get('acme', semantic))?.record.content.text).toBe('cust-1 city: Paris');
  });

  it('an episode shares the fate of the fact extracted from it: bounded when a later value takes over, superseded when a higher-trust source wins', async () => {
    const elma = await open();
    await elma.runner.start();
    const event = (n: number, text: string, value: string, channel?: string) => ({
      ...fact(n, value),
      content: { text, fact: { entity: 'Project Cobalt', attribute: 'deadline', value } },
      source: { system: channel === 'system' ? 'erp' : channel === 'web' ? 'forum' : 'chat', ...(channel ? { channel } : {}) },
    });
    const written = await elma.ingest.ingest(who, {
      events: [
        event(0, 'The deadline of Project Cobalt is 2026-04-22.', '2026-04-22'),
        event(1, 'Project Cobalt 截止日期改为 2026-04-29。', '2026-04-29'),
        event(2, 'Contract record: Project Cobalt is due 2026-05-06.', '2026-05-06', 'system'),
        event(3, 'Forum post: Project Cobalt was pushed to 2026-09-30.', '2026-09-30', 'web'),
      ],
    });
    await elma.runner.waitFor(BigInt(written.position));
    await elma.runner.waitFor(await elma.log.headPosition());
    const episode = async (n: number) => (await elma.index.get('acme', `mem_ep_${written.events[n].id}`))!.record;

    // The first episode now ends where the next value (same tier) starts: recall shows it as history after that.
    expect(await episode(0)).toMatchObject({ status: 'active', validTo: new Date(Date.UTC(2026, 10, 1, 0, 1)).toISOString() });
    // The certified record outranks the user's statement: that episode is superseded with its fact.
    expect(await episode(1)).toMatchObject({ status: 'superseded', resolution: { rule: 'source_authority' } });
    // The web claim lost to the certified record by source authority, and so did its episode.
    expect(await episode(3)).toMatchObject({ status: 'superseded', resolution: { rule: 'source_authority' } });
    expect(await episode(2)).toMatchObject({ status: 'active', validTo: null });

    const recalled = await elma.recall.recall(who, { query: 'When is Project Cobalt due?', purpose: 'support', budgetTokens: 400 });
    expect(recalled.context).not.toContain('2026-09-30');
    expect(recalled.context).toContain('2026-05-06');
  });
});
