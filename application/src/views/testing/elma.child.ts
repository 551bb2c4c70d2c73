/**
 * Run as a child process by the projection fault tests: one ELMA process
 * (engines, services and the projection runner, without Temporal or HTTP)
 * over a data folder.
 *
 * `index <dir>`: ingests 30 events for each of the tenants acme and beta,
 * waits until they are indexed, stops (closing every file) and prints `indexed`.
 *
 * `resume <dir>`: starts again on the same folder, ingests 20 more events
 * for each tenant, and prints one `report {json}` line: what acme's index,
 * /health and a recall for beta say, then what a rebuild of beta (drop,
 * replay of its log) gives. Runs until killed.
 */
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma } from '@elma/runtime';
import { silentLogger } from '@elma/shared';

const principal = (tenant: string): Principal => ({
  tenant,
  sub: 'agent-1',
  roles: ['agent'],
  purposes: ['support'],
  clearance: 'internal',
});
const events = (tenant: string, from: number, count: number) => ({
  events: Array.from({ length: count }, (_, i) => ({
    subject: `cust-${(from + i) % 5}`,
    occurredAt: new Date(Date.UTC(2026, 10, 1, 0, from + i)).toISOString(),
    activity: 'chat.turn',
    content: { text: `Delivery update ${from + i} for ${tenant}: the parcel left the depot` },
    source: { system: 'crm', externalId: `${tenant}-${from + i}` },
    purposes: ['support'],
  })),
});

const [mode, dir] = process.argv.slice(2);
const elma = await openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dir }), { logger: silentLogger });
await elma.runner.start();

if (mode === 'index') {
  for (const tenant of ['acme', 'beta']) await elma.ingest.ingest(principal(tenant), events(tenant, 0, 30));
  await elma.runner.waitFor(await elma.log.headPosition());
  await elma.close();
  process.stdout.write('indexed\n');
  process.exit(0);
} else if (mode === 'resume') {
  await elma.ingest.ingest(principal('beta'), events('beta', 30, 20));
  const last = await elma.ingest.ingest(principal('acme'), events('acme', 30, 20));
  const caughtUp = await elma.runner.waitFor(BigInt(last.position), 15_000).then(
    () => true,
    () => false,
  );
  const recallBeta = await elma.recall.recall(principal('beta'), { query: 'delivery depot', purpose: 'support' }).then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? 'error',
  );
  const before = { caughtUp, acme: await elma.index.count('acme'), index: (await elma.health()).index, recallBeta };
  const started = Date.now();
  await elma.views.drop('beta');
  const replayed = await elma.views.replay('beta');
  const after = {
    rebuildMs: Date.now() - started,
    beta: replayed.memories,
    index: (await elma.health()).index,
    recallBeta: (await elma.recall.recall(principal('beta'), { query: 'delivery depot', purpose: 'support' })).items.length > 0,
  };
  process.stdout.write(`report ${JSON.stringify({ before, after })}\n`);
} else {
  throw new Error(`unknown mode ${mode}`);
}
setInterval(() => undefined, 60_000);
