import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WrongExpectedVersion, type EventLog } from '@elma/domain';
import { SqliteEventLog, SqliteKeyVault } from '@elma/infra';
import { AuditLog, type RecordAuditEntry } from './audit-log';

const T0 = Date.parse('2025-03-01T00:00:00.000Z');

/** A clock the test moves by hand. */
function manualClock() {
  let now = T0;
  return { now: () => new Date(now), advance: (ms: number) => void (now += ms) };
}

/** Counts appends and revision conflicts reaching the real log. */
function observed(log: EventLog) {
  const stats = { appends: 0, conflicts: 0 };
  const proxy = new Proxy(log, {
    get(target, prop) {
      if (prop === 'append') {
        return async (...args: Parameters<EventLog['append']>) => {
          stats.appends += 1;
          try {
            return await target.append(...args);
          } catch (error) {
            if (error instanceof WrongExpectedVersion) stats.conflicts += 1;
            throw error;
          }
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { log: proxy, stats };
}

const request = (i: number, overrides: Partial<RecordAuditEntry> = {}): RecordAuditEntry => ({
  tenant: 't1',
  actor: 'agent-1',
  subject: 'alice',
  operation: 'read',
  resourceIds: [`m${i}`],
  decision: { effect: 'allow', rule: 'policy.read' },
  requestId: `req-${i}`,
  ...overrides,
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('audit log on a real SQLite event log', () => {
  let dir: string;
  let path: string;
  let events: SqliteEventLog;
  let clock: ReturnType<typeof manualClock>;
  let audit: AuditLog;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'elma-audit-'));
    path = join(dir, 'events.db');
    events = SqliteEventLog.open(path);
    clock = manualClock();
    audit = new AuditLog({ log: events, clock });
  });

  afterEach(async () => {
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Edits the stored events table behind the log's back, as an attacker with file access could. */
  /** Events are kept by their stream's number (see the event log's schema): the attacker looks it up. */
  const inStream = 'stream = (SELECT id FROM streams WHERE name = ?)';
  function tamper(sql: string, ...params: unknown[]): void {
    const db = new Database(path);
    try {
      expect(db.prepare(sql).run(...params).changes).toBe(1);
    } finally {
      db.close();
    }
  }

  it('a long chain of entries verifies', async () => {
    for (let i = 0; i < 300; i++) {
      await audit.record(request(i));
      clock.advance(1);
    }
    expect(await audit.verify('t1')).toEqual({ ok: true, checked: 300 });
  });

  it('an empty trail verifies', async () => {
    expect(await audit.verify('nobody')).toEqual({ ok: true, checked: 0 });
  });

  it('stores ids and hashes only, one AuditEntryRecorded per entry in the tenant stream', async () => {
    const entry = await audit.record(request(1));
    const [stored] = await collect(events.readStream('audit-t1'));
    expect(stored.type).toBe('AuditEntryRecorded');
    expect(stored.revision).toBe(0n);
    expect(stored.data).toEqual(entry);
    expect(entry).toMatchObject({ seq: 0, time: '2025-03-01T00:00:00.000Z', prevHash: '0'.repeat(64) });
  });

  it('200 concurrent records form one linear chain, sent in few appends', async () => {
    // Given a log whose appends are counted
    const { log, stats } = observed(events);
    const grouped = new AuditLog({ log, clock });
    // When 200 callers record at once
    const entries = await Promise.all(Array.from({ length: 200 }, (_, i) => grouped.record(request(i))));
    // Then each caller got its own entry, seqs are 0..199 in call order, and the chain holds
    expect(entries.map((e) => e.requestId)).toEqual(Array.from({ length: 200 }, (_, i) => `req-${i}`));
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(stats.appends).toBeLessThanOrEqual(2);
    expect(await grouped.verify('t1')).toEqual({ ok: true, checked: 200 });
  });

  it('records made while an append is in flight go out together in the next append', async () => {
    const { log, stats } = observed(events);
    const grouped = new AuditLog({ log, clock });
    const first = grouped.record(request(0));
    await Promise.resolve(); // the first append has started
    const rest = Array.from({ length: 50 }, (_, i) => grouped.record(request(i + 1)));
    await Promise.all([first, ...rest]);
    expect(stats.appends).toBe(2);
    expect(await grouped.verify('t1')).toEqual({ ok: true, checked: 51 });
  });

  it('tenants have separate chains', async () => {
    await Promise.all([audit.record(request(1)), audit.record(request(2, { tenant: 't2' })), audit.record(request(3))]);
    expect((await collect(audit.export('t1'))).map((e) => e.seq)).toEqual([0, 1]);
    expect((await collect(audit.export('t2'))).map((e) => [e.seq, e.requestId])).toEqual([[0, 'req-2']]);
  });

  it('a malformed request is rejected alone and does not join the chain', async () => {
    const results = await Promise.allSettled([
      audit.record(request(1)),
      audit.record(request(2, { resourceIds: [''] })),
      audit.record(request(3)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await audit.verify('t1')).toEqual({ ok: true, checked: 2 });
  });

  it('keeps only a pseudonym of the data subject when given one, and still finds entries by subject', async () => {
    const pseudonymous = new AuditLog({
      log: events,
      clock,
      pseudonymize: (tenant, subject) => `sfp_${tenant}_${subject.length}_${[...subject].reverse().join('')}`,
    });
    await pseudonymous.record(request(0, { subject: 'alice-smith' }));
    await pseudonymous.record(request(1, { subject: null }));

    const entries = await collect(pseudonymous.export('t1'));
    expect(entries.map((e) => e.subject)).toEqual(['sfp_t1_11_htims-ecila', null]);
    expect((await collect(pseudonymous.export('t1', { subject: 'alice-smith' }))).map((e) => e.seq)).toEqual([0]);
    expect(JSON.stringify(entries)).not.toContain('alice-smith');
    expect(await pseudonymous.verify('t1')).toEqual({ ok: true, checked: 2 });
  });

  it('names a caller who is a data subject of the tenant by their pseudonym, which their erasure forgets; staff by sub', async () => {
    // Given a vault that knows cust-2 as a subject of t1 (an event about them was ingested)
    const vault = new SqliteKeyVault({ path: join(dir, 'keys.db'), masterKey: randomBytes(32) });
    try {
      const pseudonym = (await vault.subjectPseudonyms('t1', ['cust-2'], { create: true })).get('cust-2')!;
      const named = new AuditLog({ log: events, clock, subjects: vault });
      // When the subject, a DPO and ELMA itself act
      const bySubject = await named.record(request(0, { actor: { sub: 'cust-2', roles: [] } }));
      const byStaff = await named.record(request(1, { actor: { sub: 'dpo-1', roles: ['dpo'] } }));
      const bySystem = await named.record(request(2, { actor: 'system:retention' }));
      // Then the subject is named by pseudonym, the others as they are, each with the roles they acted with
      expect([bySubject, byStaff, bySystem].map((e) => [e.actor, e.actorRoles])).toEqual([
        [pseudonym, []],
        ['dpo-1', ['dpo']],
        ['system:retention', ['system']],
      ]);
      // and asking whether the DPO is a subject made them none
      expect((await vault.subjectPseudonyms('t1', ['dpo-1'], { create: false })).size).toBe(0);
      // An auditor still finds the subject's own actions by their id while they have a pseudonym
      expect((await collect(named.export('t1', { actor: 'cust-2' }))).map((e) => e.seq)).toEqual([0]);
      // Once the erasure forgot the pseudonym, nothing in the trail leads to the subject, and the chain holds
      await vault.forgetSubject('t1', 'cust-2');
      const trail = JSON.stringify(await collect(named.export('t1')));
      expect(trail).not.toContain('cust-2');
      expect(await vault.subjectsOfPseudonyms('t1', [pseudonym])).toEqual(new Map());
      expect(await named.verify('t1')).toEqual({ ok: true, checked: 3 });
    } finally {
      await vault.close();
    }
  });

  it('names a caller whose token carries no built-in role by a pseudonym even before any event about them, and their erasure forgets it', async () => {
    // Given a vault that holds nothing on late-subj yet (no event about them arrived)
    const vault = new SqliteKeyVault({ path: join(dir, 'keys.db'), masterKey: randomBytes(32) });
    try {
      const named = new AuditLog({ log: events, clock, subjects: vault });
      // When they act with their own token (no role, or only roles a tenant policy defines), and an agent acts too
      const first = await named.record(request(0, { actor: { sub: 'late-subj', roles: [] } }));
      const policyRole = await named.record(request(1, { actor: { sub: 'late-subj-2', roles: ['customer'] } }));
      const agent = await named.record(request(2, { actor: { sub: 'agent-11', roles: ['agent'] } }));
      // Then the subject is named by the pseudonym the vault now holds for them, the same their events will get
      const pseudonym = (await vault.subjectPseudonyms('t1', ['late-subj'], { create: false })).get('late-subj');
      expect(first.actor).toBe(pseudonym);
      expect(first.actor).toMatch(/^psn_/);
      expect(policyRole.actor).toMatch(/^psn_/);
      // while an agent keeps its sub, and was made no subject
      expect(agent.actor).toBe('agent-11');
      expect((await vault.subjectPseudonyms('t1', ['agent-11'], { create: false })).size).toBe(0);
      // Once erased, nothing in the trail names them, and the chain holds
      await vault.forgetSubject('t1', 'late-subj');
      expect(JSON.stringify(await collect(named.export('t1')))).not.toContain('late-subj');
      expect(await named.verify('t1')).toEqual({ ok: true, checked: 3 });
    } finally {
      await vault.close();
    }
  });

  it('exports by time range, actor, subject, resource id and operation', async () => {
    // Given entries one minute apart with varied attributes
    const minute = 60_000;
    const specs: Partial<RecordAuditEntry>[] = [
      { actor: 'a', subject: 'alice', operation: 'read', resourceIds: ['m1', 'm2'] },
      { actor: 'b', subject: 'bob', operation: 'write', resourceIds: ['m3'] },
      { actor: 'a', subject: null, operation: 'administer', resourceIds: [] },
      { actor: 'b', subject: 'alice', operation: 'erase', resourceIds: ['m2'] },
      { actor: 'a', subject: 'alice', operation: 'export', resourceIds: ['m1'] },
    ];
    for (const [i, spec] of specs.entries()) {
      await audit.record(request(i, spec));
      clock.advance(minute);
    }
    const seqs = async (filter: Parameters<AuditLog['export']>[1]) => (await collect(audit.export('t1', filter))).map((e) => e.seq);
    const at = (m: number) => new Date(T0 + m * minute).toISOString();

    expect(await seqs({})).toEqual([0, 1, 2, 3, 4]);
    expect(await seqs({ from: at(1), to: at(3) })).toEqual([1, 2]);
    expect(await seqs({ from: at(4) })).toEqual([4]);
    expect(await seqs({ actor: 'a' })).toEqual([0, 2, 4]);
    expect(await seqs({ subject: 'alice' })).toEqual([0, 3, 4]);
    expect(await seqs({ resourceId: 'm2' })).toEqual([0, 3]);
    expect(await seqs({ operation: 'erase' })).toEqual([3]);
    expect(await seqs({ actor: 'a', subject: 'alice', to: at(4) })).toEqual([0]);
  });

  it('two writers on the same file keep one linear chain', async () => {
    // Given a second process's log and audit writer on the same database file
    const otherEvents = SqliteEventLog.open(path);
    try {
      const mine = observed(events);
      const theirs = observed(otherEvents);
      const a = new AuditLog({ log: mine.log, clock });
      const b = new AuditLog({ log: theirs.log, clock });
      // Each caches a head, so each write of one makes the other's cache stale
      await a.record(request(0, { actor: 'a' }));
      await b.record(request(0, { actor: 'b' }));
      // When both record concurrently, interleaved
      const writes = Array.from({ length: 150 }, (_, i) => [
        a.record(request(i + 1, { actor: 'a' })),
        b.record(request(i + 1, { actor: 'b' })),
      ]).flat();
      const entries = await Promise.all(writes);
      // Then they did conflict, and the result is still one chain holding every entry once
      expect(mine.stats.conflicts + theirs.stats.conflicts).toBeGreaterThan(0);
      expect(new Set(entries.map((e) => e.seq)).size).toBe(300);
      expect(await a.verify('t1')).toEqual({ ok: true, checked: 302 });
      expect(await b.verify('t1')).toEqual({ ok: true, checked: 302 });
      const stored = await collect(a.export('t1'));
      expect(stored.filter((e) => e.actor === 'a')).toHaveLength(151);
      expect(stored.filter((e) => e.actor === 'b')).toHaveLength(151);
    } finally {
      await otherEvents.close();
    }
  });

  describe('tampering with the stored file', () => {
    beforeEach(async () => {
      await Promise.all(Array.from({ length: 10 }, (_, i) => audit.record(request(i))));
      expect(await audit.verify('t1')).toEqual({ ok: true, checked: 10 });
    });

    it('an edited entry is named as a hash mismatch at its seq', async () => {
      tamper(
        `UPDATE event_rows SET data = json_set(data, '$.resourceIds', json('["m-other"]')) WHERE ${inStream} AND revision = ?`,
        'audit-t1',
        7,
      );
      expect(await audit.verify('t1')).toEqual({ ok: false, checked: 7, firstBroken: { seq: 7, reason: 'hash_mismatch' } });
    });

    it('a deleted entry is named as a gap at the missing seq', async () => {
      tamper(`DELETE FROM event_rows WHERE ${inStream} AND revision = ?`, 'audit-t1', 4);
      expect(await audit.verify('t1')).toEqual({ ok: false, checked: 4, firstBroken: { seq: 4, reason: 'seq_gap' } });
    });

    it('a deleted entry whose successors were renumbered is named as a broken link', async () => {
      // The attacker also closes the gap in both seq and revision
      const db = new Database(path);
      db.prepare(`DELETE FROM event_rows WHERE ${inStream} AND revision = 4`).run('audit-t1');
      for (let r = 5; r < 10; r++) {
        db.prepare(
          `UPDATE event_rows SET revision = revision - 1, data = json_set(data, '$.seq', json_extract(data, '$.seq') - 1) WHERE ${inStream} AND revision = ?`,
        ).run('audit-t1', r);
      }
      db.close();
      expect(await audit.verify('t1')).toEqual({ ok: false, checked: 4, firstBroken: { seq: 4, reason: 'prev_hash_mismatch' } });
    });

    it('an entry that no longer parses is named as unparseable, and export refuses it', async () => {
      tamper(`UPDATE event_rows SET data = '{"rewritten":true}' WHERE ${inStream} AND revision = ?`, 'audit-t1', 3);
      expect(await audit.verify('t1')).toEqual({ ok: false, checked: 3, firstBroken: { seq: 3, reason: 'unparseable' } });
      await expect(collect(audit.export('t1'))).rejects.toMatchObject({ code: 'AUDIT.ENTRY_UNPARSEABLE' });
    });
  });
});
