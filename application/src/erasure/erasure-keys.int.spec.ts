import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { KeyShredded, type EventIngested, type Principal } from '@elma/domain';
import type { Elma } from '@elma/runtime';
import { scratchElma } from '../testing/scratch-elma';

const SUBJECTS = ['ann', 'bo', 'cy'];
const KEYS = ['k1', 'k2', 'k3', undefined];
const TEXTS = [
  'Ann prefers the Harwick depot for pallet pickups',
  'Bo asked to move the Quillfeather invoice to March',
  '客户要求把发票寄到杭州的新地址',
  'Cy keeps the spare warehouse key with the night guard',
];

/**
 * One step of a random history: an event (maybe reusing an idempotency key), a consolidation, or an explicit
 * memory derived from two earlier events (possibly of two subjects).
 */
type Step =
  { kind: 'ingest'; subject: number; key: number; text: number } | { kind: 'consolidate' } | { kind: 'derive'; from: [number, number] };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('ingest' as const),
      subject: fc.nat(SUBJECTS.length - 1),
      key: fc.nat(KEYS.length - 1),
      text: fc.nat(TEXTS.length - 1),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('consolidate' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('derive' as const), from: fc.tuple(fc.nat(20), fc.nat(20)) }) },
);

/**
 * Whatever the history (several subjects, idempotency keys reused across
 * subjects and contents, consolidations), an erasure destroys exactly the keys
 * of its closure: every event of the erased subject, none of another's, and
 * each other subject's texts still open from the log.
 */
describe('the keys an erasure destroys', () => {
  const scratch = scratchElma('erasure-keys');
  let elma: Elma;
  let run = 0;

  beforeAll(() => {
    elma = scratch.elma;
  });

  const caught = async (call: () => Promise<unknown>) => {
    try {
      await call();
      return undefined;
    } catch (error) {
      return error as { code?: string };
    }
  };

  it('are exactly those of the records and events in its closure', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), fc.nat(SUBJECTS.length - 1), async (history, erasedIndex) => {
        const tenant = `keys${run++}`;
        const agent: Principal = { tenant, sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
        const dpo: Principal = { tenant, sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
        const settle = async () => elma.runner.waitFor(await elma.log.headPosition(), 30_000);
        // The model: who first wrote under each idempotency key, and each accepted event's owner.
        const firstWriter = new Map<string, string>();
        const owner = new Map<string, string>();
        const derivedFrom = new Map<string, string[]>();
        for (const [i, s] of history.entries()) {
          if (s.kind === 'consolidate') {
            await settle();
            const refs = await elma.consolidation.subjectRefs(tenant);
            await elma.consolidation.consolidateMany(tenant, refs);
            continue;
          }
          if (s.kind === 'derive') {
            const ids = [...owner.keys()];
            if (ids.length === 0) continue;
            const sources = [...new Set(s.from.map((n) => ids[n % ids.length]))];
            await settle();
            const written = await elma.memories.write(agent, {
              kind: 'semantic',
              content: { text: `note ${i} built on ${sources.length} events` },
              sourceEventIds: sources,
              purposes: ['support'],
            });
            derivedFrom.set(written.memory.id, sources);
            continue;
          }
          const subject = SUBJECTS[s.subject];
          const key = KEYS[s.key];
          const text = TEXTS[s.text];
          const event = {
            subject,
            occurredAt: new Date(Date.UTC(2026, 10, 1, s.text)).toISOString(),
            activity: 'chat.turn',
            content: { text },
            source: { system: 'crm', channel: 'chat' },
            purposes: ['support'],
            ...(key ? { idempotencyKey: key } : {}),
          };
          const identity = key ?? `auto:${subject}:${text}`;
          const said = `${subject}\u0000${text}`;
          const error = await caught(async () => {
            const { events } = await elma.ingest.ingest(agent, event, `req-${i}`);
            owner.set(events[0].id, subject);
            expect(events[0].duplicate).toBe(firstWriter.has(identity));
          });
          if (!firstWriter.has(identity)) {
            expect(error, 'a fresh idempotency key is accepted').toBeUndefined();
            firstWriter.set(identity, said);
          } else if (firstWriter.get(identity) === said) expect(error, 'a retry is a duplicate').toBeUndefined();
          else expect(error?.code, 'a reused key for another subject or content').toBe('MEMORY.ALREADY_RECORDED');
        }
        await settle();

        const erasedSubject = SUBJECTS[erasedIndex];
        const { requestId } = await elma.erasure.requests.request(
          dpo,
          { scope: { type: 'subject', subject: erasedSubject }, reason: 'subject_request' },
          'req',
        );
        const at = { attempt: 1, startedAt: new Date().toISOString() };
        const { perRecord } = await elma.erasure.steps.authorize(tenant, requestId, at);
        const { seeds } = await elma.erasure.steps.locate(tenant, requestId, perRecord, at);
        const closure = await elma.erasure.steps.closure(tenant, requestId, seeds, at);
        const set = await elma.erasure.steps.legalHoldCheck(tenant, requestId, closure, at);

        const recordIds: string[] = [];
        for await (const entry of elma.index.lineage(tenant)) recordIds.push(entry.id);
        const everyKey = [...new Set([...recordIds, ...owner.keys()])];
        expect(await elma.vault.shreddedAmong(tenant, everyKey)).toEqual(new Set());
        await elma.erasure.steps.shredKeys(tenant, requestId, { recordIds: set.recordIds, eventIds: set.eventIds }, at);

        const shredded = await elma.vault.shreddedAmong(tenant, everyKey);
        expect(shredded).toEqual(new Set([...set.recordIds, ...set.eventIds]));
        for (const [eventId, subject] of owner) expect(shredded.has(eventId), `event of ${subject}`).toBe(subject === erasedSubject);
        // A note goes with the erased subject's events it was built on, and only then.
        for (const [id, sources] of derivedFrom)
          expect(shredded.has(id), `note on ${sources.map((e) => owner.get(e))}`).toBe(sources.some((e) => owner.get(e) === erasedSubject));
        // Every other subject's events still open, with the text that subject sent.
        for await (const recorded of elma.log.readAll({ filter: { streamNamePrefix: [`events-${tenant}-`] } })) {
          const subject = owner.get(recorded.id);
          if (subject === erasedSubject) {
            await expect(elma.sealer.open(tenant, [recorded])).rejects.toBeInstanceOf(KeyShredded);
            continue;
          }
          const [opened] = await elma.sealer.open<EventIngested>(tenant, [recorded]);
          expect(opened.subject).toBe(subject);
          expect(TEXTS).toContain(opened.content.text);
        }
      }),
      { numRuns: 50 },
    );
  }, 300_000);
});
