import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { streams, type EventIngested, type EventLog, type Principal } from '@elma/domain';
import { chatEvent } from '@elma/domain/testing';
import { AuditLog } from '../audit/audit-log';
import { ErasureFingerprints } from '../erasure/fingerprints';
import { ErasureGuard } from '../erasure/guard';
import { Tombstones } from '../erasure/tombstones';
import { EventStoreDbEventLog } from '@elma/infra';
import { SqliteEventLog } from '@elma/infra';
import { SqliteKeyVault } from '@elma/infra';
import { PolicyStore } from '../governance/policy-store';
import { WriteTracker } from '../views/write-tracker';
import { EventSealer } from '../sealing/sealed-events';
import { deterministicUuid, eventIdKeyOf, keyedFingerprint } from '@elma/shared';
import { IngestService } from './ingest-service';

const agent: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
const event = (subject: string, text: string, idempotencyKey?: string) =>
  chatEvent(subject, text, idempotencyKey ? { idempotencyKey } : {});

/**
 * The identity rules of ingest hold on any event log, since they use only the
 * port: run on SQLite always, and on EventStoreDB when `ELMA_EVENTSTORE_URL` names a server.
 */
function ingestIdentitySuite(engine: string, openLog: (dir: string) => Promise<EventLog>) {
  describe(`ingest identity on ${engine}`, () => {
    async function open() {
      const dir = mkdtempSync(join(tmpdir(), 'elma-ingest-'));
      const masterKey = randomBytes(32);
      const log = await openLog(dir);
      const vault = new SqliteKeyVault({ path: join(dir, 'keys.db'), masterKey });
      const sealer = new EventSealer(vault);
      const policies = new PolicyStore({ log });
      const fingerprints = new ErasureFingerprints(Buffer.from(keyedFingerprint(masterKey, 'elma.erasure.v1'), 'hex'));
      const ingest = new IngestService({
        log,
        sealer,
        clock: { now: () => new Date() },
        fingerprintKey: Buffer.from(keyedFingerprint(masterKey, 'elma.idempotency.v1'), 'hex'),
        eventIdKey: eventIdKeyOf(masterKey),
        writes: new WriteTracker(),
        policies,
        audit: new AuditLog({ log, clock: { now: () => new Date() }, pseudonymize: (_, s) => s }),
        erased: new ErasureGuard({ tombstones: new Tombstones({ log }), fingerprints, policies }),
        vault,
      });
      const subjectEvents = async (subject: string) => {
        const found: EventIngested[] = [];
        const pseudonym = (await vault.subjectPseudonyms('acme', [subject], { create: false })).get(subject);
        if (!pseudonym) return found;
        for await (const recorded of log.readStream(streams.events('acme', pseudonym)))
          found.push(...(await sealer.open<EventIngested>('acme', [recorded])));
        return found;
      };
      return {
        log,
        sealer,
        vault,
        ingest,
        subjectEvents,
        async close() {
          await vault.close();
          await log.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }

    it('of concurrent writers with one key and different subjects, exactly one wins and only its event is stored', async () => {
      const s = await open();
      try {
        const outcomes = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => s.ingest.ingest(agent, event(`racer-${i}`, `racer ${i}`, 'race-key'))),
        );
        const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toMatchObject({ code: 'MEMORY.ALREADY_RECORDED' });
        for (let i = 0; i < 6; i++)
          expect((await s.subjectEvents(`racer-${i}`)).map((e) => e.content.text)).toEqual(i === won[0] ? [`racer ${i}`] : []);
      } finally {
        await s.close();
      }
    });

    it('of concurrent writers of the very same event, one writes and the others are duplicates', async () => {
      const s = await open();
      try {
        const results = await Promise.all(
          Array.from({ length: 6 }, () => s.ingest.ingest(agent, event('same', 'one event sent six times', 'same-key'))),
        );
        expect(new Set(results.map((r) => r.events[0].id)).size).toBe(1);
        expect(results.filter((r) => !r.events[0].duplicate)).toHaveLength(1);
        expect(await s.subjectEvents('same')).toHaveLength(1);
      } finally {
        await s.close();
      }
    });

    it('an event stored before ids were keyed keeps its id, and the same key now names a new, separate event', async () => {
      const s = await open();
      try {
        const legacyId = deterministicUuid('acme', 'legacy-key');
        const stored: EventIngested = {
          ...event('old-subject', 'written by the previous version'),
          eventId: legacyId,
          tenant: 'acme',
          recordedAt: '2026-11-01T00:00:00Z',
          sensitivity: 'internal',
          retention: 'standard',
          expiresAt: null,
          idempotencyKey: 'legacy-key',
          actor: 'agent-1',
        };
        const pseudonym = (await s.vault.subjectPseudonyms('acme', ['old-subject'], { create: true })).get('old-subject')!;
        await s.log.append(
          streams.events('acme', pseudonym),
          await s.sealer.seal('acme', [{ id: legacyId, type: 'EventIngested', keyId: legacyId, data: stored }]),
          {
            expectedRevision: 'any',
          },
        );
        const { events } = await s.ingest.ingest(agent, event('new-subject', 'written under the same key today', 'legacy-key'));
        expect(events[0].id).not.toBe(legacyId);
        expect((await s.subjectEvents('old-subject')).map((e) => [e.eventId, e.content.text])).toEqual([
          [legacyId, 'written by the previous version'],
        ]);
      } finally {
        await s.close();
      }
    });
  });
}

ingestIdentitySuite('SQLite', async (dir) => SqliteEventLog.open(join(dir, 'events.db')));

const esdb = process.env.ELMA_EVENTSTORE_URL;
if (esdb)
  ingestIdentitySuite('EventStoreDB', () => EventStoreDbEventLog.open({ url: esdb, namespace: `t${randomUUID().replaceAll('-', '')}.` }));
