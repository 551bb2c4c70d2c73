import { beforeAll, describe, expect, it } from 'vitest';
import { makeCertificate } from '@elma/domain/testing';
import { ERASURE_STEPS, KeyShredded, streams, type Principal, type RecordedEvent, type StepRecord } from '@elma/domain';
import { countStreamReads } from '../command/testing';
import { deterministicUuid } from '@elma/shared';
import type { Elma } from '@elma/runtime';
import { ErasureStore } from './erasure-store';
import { scratchElma } from '../testing/scratch-elma';

const request = {
  requestId: 'era_old',
  tenant: 'acme',
  reason: 'subject_request' as const,
  requestedBy: { sub: 'dpo-1', roles: ['dpo'], clearance: 'restricted' as const },
  requestedAt: '2026-12-01T00:00:00.000Z',
};
const workset = {
  records: [{ id: 'mem-1', kind: 'episodic' as const, subject: 'cust-1', text: 'a text', terms: ['text'], vector: 'AAAA' }],
  eventStreams: { 'evt-1': 'events-acme-psn_x' },
};
const stepRecord: StepRecord = {
  step: 'authorize',
  startedAt: '2026-12-01T00:00:01.000Z',
  finishedAt: '2026-12-01T00:00:02.000Z',
  attempts: 1,
  counts: { perRecord: 0 },
};

async function rows(elma: Elma, stream: string): Promise<Pick<RecordedEvent, 'id' | 'type' | 'data' | 'metadata'>[]> {
  const out = [];
  for await (const { id, type, data, metadata } of elma.log.readStream(stream)) out.push({ id, type, data, metadata });
  return out;
}

describe('the erasure stream', () => {
  const scratch = scratchElma('erasure-store');
  let elma: Elma;
  beforeAll(() => {
    elma = scratch.elma;
  });

  it('reads a stream as the store wrote it before the decider (same ids, types, payloads, sealing)', async () => {
    const stream = streams.erasure('acme', 'era_old');
    const keyId = 'erasure:era_old';
    const signed = {
      certificate: makeCertificate({ keyId: 'k1' }),
      signature: { alg: 'EdDSA' as const, kid: 'k1', value: 'c2lnbmF0dXJl' },
    };
    // Written here exactly as the previous ErasureStore did: sealed request and workset, then plain facts, expectedRevision any.
    const sealed = await elma.sealer.seal('acme', [
      {
        id: deterministicUuid('ErasureRequested', 'acme', 'era_old'),
        type: 'ErasureRequested',
        keyId,
        data: { ...request, scope: { type: 'subject', subject: 'cust-1' } },
      },
    ]);
    await elma.log.append(stream, sealed, { expectedRevision: 'no_stream' });
    await elma.log.append(
      stream,
      await elma.sealer.seal('acme', [
        { id: deterministicUuid('ErasureWorksetCaptured', 'acme', 'era_old'), type: 'ErasureWorksetCaptured', keyId, data: { workset } },
      ]),
      { expectedRevision: 'any' },
    );
    const plain = [
      {
        id: deterministicUuid('erasure-step', 'acme', 'era_old', 'authorize'),
        type: 'ErasureStepCompleted',
        data: stepRecord,
        metadata: { tenant: 'acme' },
      },
      {
        id: deterministicUuid('erasure-audit', 'acme', 'era_old'),
        type: 'ErasureAuditClosed',
        data: { seq: 7, hash: 'f'.repeat(64) },
        metadata: { tenant: 'acme' },
      },
      {
        id: deterministicUuid('erasure-certificate', 'acme', 'era_old'),
        type: 'ErasureCertified',
        data: signed,
        metadata: { tenant: 'acme' },
      },
      {
        id: deterministicUuid('erasure-abandoned', 'acme', 'era_old'),
        type: 'ErasureAbandoned',
        data: { outcome: 'ERASURE.FAILED', at: '2026-12-01T00:01:00.000Z' },
        metadata: { tenant: 'acme' },
      },
    ];
    for (const event of plain) await elma.log.append(stream, [event], { expectedRevision: 'any' });
    const before = await rows(elma, stream);

    const erasure = await elma.erasure.store.load('acme', 'era_old');
    expect(erasure.request).toEqual(request);
    expect(await erasure.scope()).toEqual({ type: 'subject', subject: 'cust-1' });
    expect(await erasure.workset()).toEqual(workset);
    expect([...erasure.steps.values()]).toEqual([stepRecord]);
    expect(erasure.auditAnchor).toEqual({ seq: 7, hash: 'f'.repeat(64) });
    expect(erasure.certificate).toEqual(signed);
    expect(erasure.abandonment).toEqual({ outcome: 'ERASURE.FAILED', at: '2026-12-01T00:01:00.000Z' });

    // Writing every fact again through the decider writes nothing: same ids, already there.
    await elma.erasure.store.create(request, { type: 'subject', subject: 'cust-1' });
    await elma.erasure.store.saveWorkset(erasure, workset);
    expect(await elma.erasure.store.completeStep(erasure, stepRecord)).toBe(false);
    await elma.erasure.store.saveAuditAnchor(erasure, { seq: 7, hash: 'f'.repeat(64) });
    await elma.erasure.store.saveCertificate(erasure, signed);
    await elma.erasure.store.saveAbandonment(erasure, { outcome: 'ERASURE.FAILED', at: '2026-12-01T00:01:00.000Z' });
    expect(await rows(elma, stream)).toEqual(before);
  });

  it('writes the same ids, types, payloads and metadata as before', async () => {
    const store = new ErasureStore({ log: elma.log, sealer: elma.sealer });
    const fresh = { ...request, requestId: 'era_new' };
    await store.create(fresh, { type: 'records', recordIds: ['mem-9'] });
    const erasure = await store.load('acme', 'era_new');
    await store.saveWorkset(erasure, workset);
    await store.completeStep(erasure, stepRecord);
    await store.saveAuditAnchor(erasure, { seq: 1, hash: 'a'.repeat(64) });
    await store.saveAbandonment(erasure, { outcome: 'ERASURE.FAILED', at: '2026-12-01T00:01:00.000Z' });
    const written = await rows(elma, streams.erasure('acme', 'era_new'));
    const keyId = 'erasure:era_new';
    expect(written.map(({ id, type, metadata }) => ({ id, type, metadata }))).toEqual([
      { id: deterministicUuid('ErasureRequested', 'acme', 'era_new'), type: 'ErasureRequested', metadata: { tenant: 'acme', keyId } },
      {
        id: deterministicUuid('ErasureWorksetCaptured', 'acme', 'era_new'),
        type: 'ErasureWorksetCaptured',
        metadata: { tenant: 'acme', keyId },
      },
      { id: deterministicUuid('erasure-step', 'acme', 'era_new', 'authorize'), type: 'ErasureStepCompleted', metadata: { tenant: 'acme' } },
      { id: deterministicUuid('erasure-audit', 'acme', 'era_new'), type: 'ErasureAuditClosed', metadata: { tenant: 'acme' } },
      { id: deterministicUuid('erasure-abandoned', 'acme', 'era_new'), type: 'ErasureAbandoned', metadata: { tenant: 'acme' } },
    ]);
    const { scope: sealedScope, ...clear } = written[0].data as Record<string, unknown>;
    expect(clear).toEqual(fresh);
    expect(sealedScope).toMatchObject({ v: 1, alg: 'A256GCM' });
    // The sealed parts open as the previous store opened them, and not once the request key is shredded.
    const [opened] = await elma.sealer.open<{ scope: unknown; workset: unknown }>('acme', [
      { ...(await first(elma, 'era_new')), metadata: written[0].metadata },
    ]);
    expect(opened.scope).toEqual({ type: 'records', recordIds: ['mem-9'] });
    expect(written[2].data).toEqual(stepRecord);
    expect(written[3].data).toEqual({ seq: 1, hash: 'a'.repeat(64) });
    expect(written[4].data).toEqual({ outcome: 'ERASURE.FAILED', at: '2026-12-01T00:01:00.000Z' });
    await elma.vault.shred('acme', [keyId]);
    await expect((await store.load('acme', 'era_new')).workset()).rejects.toBeInstanceOf(KeyShredded);
  });

  it('is read once per step: the closure and the certificate read the erasure stream once each', async () => {
    const dpo: Principal = { tenant: 'reads', sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
    const agent: Principal = { tenant: 'reads', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'internal' };
    const chat = {
      occurredAt: '2026-11-20T10:00:00Z',
      activity: 'chat.turn',
      source: { system: 'crm', channel: 'chat' },
      purposes: ['support'],
    };
    await elma.ingest.ingest(agent, { ...chat, subject: 'cust-r', content: { text: 'Cust R prefers the Larkspur depot' } }, 'req-1');
    await elma.ingest.ingest(agent, { ...chat, subject: 'cust-r', content: { text: 'Cust R moved the invoice to April' } }, 'req-2');
    await elma.runner.waitFor(await elma.log.headPosition(), 30_000);
    const { requestId } = await elma.erasure.requests.request(
      dpo,
      { scope: { type: 'subject', subject: 'cust-r' }, reason: 'subject_request' },
      'req-3',
    );
    const stream = streams.erasure('reads', requestId);
    const at = { attempt: 1, startedAt: new Date().toISOString() };
    const { steps, certification } = elma.erasure;
    const counted = countStreamReads(elma.log);
    const reads: Record<string, number> = {};
    const measure = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
      counted.reset();
      const result = await call();
      reads[name] = counted.reads(stream);
      return result;
    };
    try {
      const { perRecord } = await measure('authorize', () => steps.authorize('reads', requestId, at));
      const { seeds } = await measure('locate', () => steps.locate('reads', requestId, perRecord, at));
      const closure = await measure('closure', () => steps.closure('reads', requestId, seeds, at));
      expect(closure.recordIds.length).toBeGreaterThan(0);
      const checked = await measure('legal_hold', () => steps.legalHoldCheck('reads', requestId, closure, at));
      const set = { recordIds: checked.recordIds, eventIds: checked.eventIds };
      await measure('approval', () => steps.recordApproval('reads', requestId, { required: false, startedAt: at.startedAt }, at));
      await measure('purge_index', () => steps.purgeIndex('reads', requestId, set, at));
      await measure('purge_caches', () => steps.purgeCaches('reads', requestId, set, at));
      await measure('shred_keys', () => steps.shredKeys('reads', requestId, set, at));
      const { deleted } = await measure('delete_streams', () => steps.deleteStreams('reads', requestId, set, at));
      const { tombstones } = await measure('tombstones', () => steps.writeTombstones('reads', requestId, set, at));
      const verification = await measure('verify', () => steps.verify('reads', requestId, set, 1, at));
      expect(verification.passed).toBe(true);
      const outcome = { set, held: checked.held, verification, approvedBy: null, approvedAt: null, streamsDeleted: deleted, tombstones };
      await measure('certify', () => certification.certify('reads', requestId, outcome, at));
      // A retried certify finds the certificate in the one read too.
      await measure('certify again', () => certification.certify('reads', requestId, outcome, at));
    } finally {
      counted.restore();
    }
    expect(reads).toEqual({
      authorize: 1,
      locate: 1,
      closure: 1,
      legal_hold: 1,
      approval: 1,
      purge_index: 1,
      purge_caches: 1,
      shred_keys: 1,
      delete_streams: 1,
      tombstones: 1,
      verify: 1,
      certify: 1,
      'certify again': 1,
    });
    const erasure = await elma.erasure.store.load('reads', requestId);
    expect([...erasure.steps.keys()]).toEqual([...ERASURE_STEPS]);
    expect(erasure.certificate?.certificate.closure.size).toBe(2);
  });
});

async function first(elma: Elma, requestId: string): Promise<RecordedEvent> {
  for await (const event of elma.log.readStream(streams.erasure('acme', requestId))) return event;
  throw new Error('empty stream');
}
