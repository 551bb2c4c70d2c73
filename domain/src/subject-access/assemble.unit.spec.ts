import { describe, expect, it } from 'vitest';
import { chainEntry, type AuditEntry } from '../audit/audit';
import type { LegalHold } from '../legal-hold/legal-hold';
import type { LineageEntry } from '../memory-index/port';
import { ancestryOf } from '../memory/lineage';
import type { MemoryRecord } from '../memory/record';
import { makeRecord } from '../testing';
import { assembleSubjectExport, recordsOf } from './assemble';
import { SubjectExport } from './export';

const PSEUDONYM = `psn_${'a'.repeat(32)}`;
const sha = (text: string) => text.length.toString(16).padStart(64, '0');

/** An episodic record of `subject` for the event `eventId`, as ingest derives it. */
const episodic = (subject: string, eventId: string, text: string, extra: Partial<MemoryRecord> = {}) =>
  makeRecord({
    id: `mem_ep_${eventId}`,
    subject,
    kind: 'episodic',
    text,
    provenance: { sourceEventIds: [eventId], parentIds: [], rule: 'extraction', ruleVersion: '1' },
    policy: { owner: subject },
    ...extra,
  });

/** An explicit memory derived from `parents`, owned by the first parent's subject (as `POST /v1/memories` makes it). */
const derived = (id: string, parents: MemoryRecord[], text: string) =>
  makeRecord({
    id,
    subject: parents[0].subject,
    kind: 'semantic',
    text,
    provenance: {
      sourceEventIds: parents.flatMap((p) => p.provenance.sourceEventIds),
      parentIds: parents.map((p) => p.id),
      ancestry: ancestryOf(parents),
      rule: 'explicit',
      ruleVersion: '1',
    },
    policy: { owner: parents[0].policy.owner },
  });

const lineageOf = (records: MemoryRecord[]): LineageEntry[] =>
  records.map((r) => ({
    id: r.id,
    kind: r.kind,
    subject: r.subject,
    owner: r.policy.owner,
    rule: r.provenance.rule,
    sourceEventIds: r.provenance.sourceEventIds,
    parentIds: r.provenance.parentIds,
    recordedAt: r.recordedAt,
    expiresAt: r.retention.expiresAt,
  }));

function auditTrail(drafts: Omit<AuditEntry, 'seq' | 'prevHash' | 'hash'>[]): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (const draft of drafts) entries.push(chainEntry(draft, entries.at(-1), sha));
  return entries;
}

const draft = (
  actor: string,
  subject: string | null,
  resourceIds: string[],
  operation: AuditEntry['operation'] = 'read',
  // null: an entry written before roles were recorded.
  actorRoles: string[] | null = ['agent'],
) => ({
  tenant: 'acme',
  actor,
  ...(actorRoles ? { actorRoles } : {}),
  subject,
  operation,
  resourceIds,
  decision: { effect: 'allow' as const, rule: 'test' },
  requestId: 'req-1',
  time: '2026-01-02T00:00:00.000Z',
});

function exportOf(subject: string, records: MemoryRecord[], options: { holds?: LegalHold[]; audit?: AuditEntry[] } = {}) {
  return assembleSubjectExport(inputOf(subject, records, options));
}

function inputOf(subject: string, records: MemoryRecord[], options: { holds?: LegalHold[]; audit?: AuditEntry[] } = {}) {
  return {
    tenant: 'acme',
    requestId: 'sar_1',
    subject,
    subjectPseudonym: PSEUDONYM,
    auditSubject: `sfp_${subject}`,
    producedAt: '2026-01-03T00:00:00.000Z',
    expiresAt: '2026-01-10T00:00:00.000Z',
    lineage: lineageOf(records),
    records: new Map(records.map((r) => [r.id, r])),
    holds: options.holds ?? [],
    audit: options.audit ?? [],
  };
}

describe('the export of one data subject', () => {
  const zh = episodic('cust-7', 'e1', '张伟的护照放在书房第三个抽屉里');
  const en = episodic('cust-7', 'e2', 'Zephyrine keeps a spare key under the frog');
  const other = episodic('cust-8', 'e3', 'Bartholomew prefers morning calls');
  const own = derived('mem_own', [zh, en], '张伟 summary of Zephyrine');
  const shared = derived('mem_shared', [en, other], 'Zephyrine and Bartholomew share a frog order');
  const sharedOfOther = derived('mem_shared_b', [other, zh], 'Bartholomew met 张伟');
  const all = [zh, en, other, own, shared, sharedOfOther];

  it('given records of the subject, when exported, then each is whole with its content, provenance and lineage', () => {
    const x = exportOf('cust-7', all);
    expect(SubjectExport.parse(x)).toEqual(x);
    expect(x.formatVersion).toBe(1);
    const ids = x.records.map((r) => r.id);
    expect(ids).toEqual(expect.arrayContaining([zh.id, en.id, own.id]));
    const chinese = x.records.find((r) => r.id === zh.id)!;
    expect(chinese.content.text).toBe('张伟的护照放在书房第三个抽屉里');
    expect(chinese.provenance).toEqual({ sourceEventIds: ['e1'], parentIds: [], rule: 'extraction', ruleVersion: '1' });
    // Downstream: the subject's own derived record, and the shared one (listed by id in `withheld`).
    expect(chinese.derivedRecordIds).toEqual([own.id, sharedOfOther.id].sort());
    expect(chinese.purposes).toEqual(['support']);
    expect(chinese.retention).toEqual({ class: 'standard', expiresAt: null });
    expect(x.records.find((r) => r.id === own.id)!.provenance.parentIds).toEqual([zh.id, en.id]);
  });

  it('given derived records mixing two subjects, when either subject is exported, then they are listed by id with the reason, without content', () => {
    for (const [subject, mine] of [
      ['cust-7', [en.id, zh.id]],
      ['cust-8', [other.id]],
    ] as const) {
      const x = exportOf(subject, all);
      expect(x.records.map((r) => r.id)).not.toContain(shared.id);
      expect(x.records.map((r) => r.id)).not.toContain(sharedOfOther.id);
      const withheld = x.withheld.map((w) => w.id).sort();
      expect(withheld).toEqual([shared.id, sharedOfOther.id].sort());
      for (const w of x.withheld) {
        expect(w.reason).toBe('mixed_subjects');
        expect(w.otherSources).toBeGreaterThan(0);
        for (const id of w.fromRecordIds) expect(mine as readonly string[]).toContain(id);
      }
      const text = JSON.stringify(x);
      // Nothing of the other subject: neither content nor id.
      if (subject === 'cust-7') {
        expect(text).not.toContain('Bartholomew');
        expect(text).not.toContain('cust-8');
        expect(text).not.toContain(other.id);
      } else {
        expect(text).not.toContain('Zephyrine');
        expect(text).not.toContain('张伟');
        expect(text).not.toContain('cust-7');
        expect(text).not.toContain(zh.id);
      }
    }
  });

  it('given a restricted record and one under a legal hold, when exported, then both are included and marked', () => {
    const restricted = episodic('cust-7', 'e4', 'diagnosis recorded', {
      policy: { owner: 'cust-7', roles: [], purposes: ['support'], sensitivity: 'restricted' },
    });
    const hold: LegalHold = {
      id: 'hold-1',
      scope: { recordIds: [en.id] },
      reason: 'matter-42',
      placedBy: 'legal-1',
      placedAt: '2026-01-01T00:00:00.000Z',
    };
    const x = exportOf('cust-7', [...all, restricted], { holds: [hold] });
    expect(x.records.find((r) => r.id === restricted.id)!.marks).toEqual({ restricted: true, legalHolds: [] });
    expect(x.records.find((r) => r.id === en.id)!.marks).toEqual({ restricted: false, legalHolds: ['hold-1'] });
    // A record derived from a held one is held too (holds follow lineage).
    expect(x.records.find((r) => r.id === own.id)!.marks.legalHolds).toEqual(['hold-1']);
    expect(x.counts).toMatchObject({ restricted: 1, held: 2, withheld: 2, records: 4 });
  });

  it('given an audit trail, when exported, then the processing history has the entries about the subject or its records, other ids left out', () => {
    const audit = auditTrail([
      draft('agent-1', null, ['recall/r1', zh.id, other.id]),
      draft('agent-2', null, [other.id]),
      draft('agent-3', 'sfp_cust-7', [en.id], 'write'),
      draft('dpo-1', 'sfp_cust-7', ['subject-access/sar_1'], 'export', ['dpo']),
    ]);
    const x = exportOf('cust-7', all, { audit });
    expect(x.processing.map((p) => [p.actor, p.operation, p.recordIds, p.operations])).toEqual([
      ['a staff member or service with role agent', 'read', [zh.id], ['recall/r1']],
      ['a staff member or service with role agent', 'write', [en.id], []],
      ['a staff member or service with role dpo', 'export', [], ['subject-access/sar_1']],
    ]);
    expect(x.processing[0].hash).toBe(audit[0].hash);
    expect(JSON.stringify(x.processing)).not.toContain(other.id);
  });

  it('given entries by the subject, another subject, staff and ELMA, when exported, then each actor is described by role, never named', () => {
    const otherPseudonym = `psn_${'b'.repeat(32)}`;
    const audit = auditTrail([
      draft(PSEUDONYM, null, [en.id], 'read', []),
      draft('cust-7', null, [en.id], 'read', null),
      draft(otherPseudonym, null, [en.id], 'read', []),
      draft('cust-8', null, [en.id], 'read', null),
      draft('dpo-1', null, [en.id], 'export', ['dpo', 'compliance']),
      draft('cust-9', null, [en.id], 'read', []),
      draft('system:retention', null, [en.id], 'erase', ['system']),
    ]);
    const x = exportOf('cust-7', all, { audit });
    expect(x.processing.map((p) => p.actor)).toEqual([
      'the data subject',
      'the data subject',
      'another data subject',
      'someone else (the entry predates recorded roles)',
      'a staff member or service with roles dpo, compliance',
      'a caller without a role',
      'ELMA itself',
    ]);
    const text = JSON.stringify(x.processing);
    for (const name of [otherPseudonym, 'cust-8', 'cust-9', 'dpo-1', 'system:retention']) expect(text).not.toContain(name);
  });

  it('given the ingested events, when exported, then each of the subject names its source and its record, without content', () => {
    const event = (eventId: string, subject: string) => ({
      eventId,
      tenant: 'acme',
      subject,
      occurredAt: '2026-01-01T00:00:00.000Z',
      recordedAt: '2026-01-01T00:00:01.000Z',
      activity: 'chat.turn',
      source: { system: 'crm', channel: 'chat' },
      sensitivity: 'internal' as const,
      purposes: ['support'],
      retention: 'standard' as const,
      idempotencyKey: 'k',
      actor: 'agent-1',
    });
    const audit = auditTrail([draft('agent-1', null, ['e1', 'e3'], 'write'), draft('agent-1', null, ['e3'], 'write')]);
    const byOtherSubject = { ...event('e4', 'cust-7'), eventId: 'e4', actor: 'cust-8' };
    const bySubject = { ...event('e5', 'cust-7'), eventId: 'e5', actor: 'cust-7' };
    const x = assembleSubjectExport({
      ...inputOf('cust-7', all, { audit }),
      events: [event('e1', 'cust-7'), event('e3', 'cust-8'), byOtherSubject, bySubject],
    });
    // The ingest that wrote both subjects' events, as far as it concerns this one.
    expect(x.processing.map((p) => [p.eventIds, p.recordIds])).toEqual([[['e1'], []]]);
    expect(x.events).toEqual([
      expect.objectContaining({
        id: 'e1',
        source: { system: 'crm', channel: 'chat' },
        actor: 'a caller other than the data subject',
        recordId: zh.id,
      }),
      expect.objectContaining({ id: 'e4', actor: 'a caller other than the data subject' }),
      expect.objectContaining({ id: 'e5', actor: 'the data subject' }),
    ]);
    // Another data subject who sent an event about this one is not named.
    expect(JSON.stringify(x)).not.toContain('cust-8');
    expect(x.counts.events).toBe(3);
  });

  it('given a subject with no records, when exported, then the export is empty but well-formed', () => {
    const x = exportOf('nobody', all);
    expect(x.records).toEqual([]);
    expect(x.withheld).toEqual([]);
    expect(x.counts).toEqual({ records: 0, events: 0, byKind: {}, restricted: 0, held: 0, withheld: 0, processing: 0 });
  });

  it('covers the deletion closure: what an erasure of the subject would reach', () => {
    expect(recordsOf('cust-8', lineageOf(all)).sort()).toEqual([other.id, shared.id, sharedOfOther.id].sort());
  });
});
