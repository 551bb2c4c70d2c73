import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Principal } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from './elma';

const principal: Principal = { tenant: 'acme', sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'restricted' };

describe('openElma and the erasure ledger', () => {
  const dirs: string[] = [];
  const newDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-ledger-open-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const open = (dataDir: string, env: Record<string, string> = {}) =>
    openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir, ...env }), { logger: silentLogger });

  it('refuses to start on a damaged ledger before it opens any engine', async () => {
    const dataDir = newDir();
    writeFileSync(join(dataDir, 'erasure-ledger.db'), Buffer.alloc(4096, 0x41));
    await expect(open(dataDir)).rejects.toMatchObject({ code: 'ERASURE_LEDGER.UNREADABLE' });
    expect(existsSync(join(dataDir, 'events.db'))).toBe(false);
  });

  it('refuses to start on a folder whose restore did not finish', async () => {
    const dataDir = newDir();
    writeFileSync(join(dataDir, '.restore-in-progress'), '{}');
    await expect(open(dataDir)).rejects.toMatchObject({ code: 'BACKUP.RESTORE_INTERRUPTED' });
  });

  it('keeps the ledger where ELMA_ERASURE_LEDGER says', async () => {
    const dataDir = newDir();
    const elsewhere = join(newDir(), 'ledger', 'erasures.db');
    const elma = await open(dataDir, { ELMA_ERASURE_LEDGER: elsewhere });
    await elma.close();
    expect(existsSync(elsewhere)).toBe(true);
    expect(existsSync(join(dataDir, 'erasure-ledger.db'))).toBe(false);
  });

  it('re-applies a pending entry on open, once in effect: keys shredded, rows purged, audited', async () => {
    const dataDir = newDir();
    let elma: Elma = await open(dataDir);
    let ids: string[];
    try {
      await elma.runner.start();
      const { position } = await elma.ingest.ingest(principal, {
        events: ['王先生的合同在三月续签。', 'Mr Wang renews his contract in March.'].map((text, i) => ({
          subject: 'cust-wang',
          occurredAt: `2026-11-2${i}T10:00:00Z`,
          activity: 'chat.turn',
          content: { text },
          source: { system: 'crm', externalId: `w-${i}` },
        })),
      });
      await elma.runner.waitFor(BigInt(position));
      ids = [];
      for await (const entry of elma.index.lineage('acme')) ids.push(entry.id);
      expect(ids.length).toBe(2);
      await elma.erasure.ledger.record({
        formatVersion: 1,
        tenant: 'acme',
        requestId: 'q-restored',
        completedAt: '2026-12-01T10:00:00.000Z',
        recordIds: ids,
        eventIds: [],
        deletedStreams: [],
        forgottenPseudonyms: [],
        tombstones: ['f'.repeat(64)],
        certificate: { keyId: 'k', signature: 's' },
      });
      await elma.erasure.ledger.requireReapply(0);
    } finally {
      await elma.close();
    }

    elma = await open(dataDir);
    try {
      expect(await elma.erasure.ledger.pendingReapply()).toBeUndefined();
      expect(await elma.index.count('acme')).toBe(0);
      expect((await elma.vault.shreddedAmong('acme', ids)).size).toBe(2);
      // Applied again by hand: nothing left to do, no second audit entry.
      expect(await elma.erasure.reapply.reapplyAll()).toMatchObject({ checked: 1, erasures: 0, keysShredded: 0, recordsPurged: 0 });
      const audited = [];
      for await (const entry of elma.audit.export('acme', { resourceId: 'erasure/q-restored' })) audited.push(entry);
      expect(audited.map((e) => e.resourceIds)).toEqual([['erasure/q-restored', 'reapplied']]);
    } finally {
      await elma.close();
    }
  });

  it('re-applies an erasure to a restored subject-access export of the erased subject: the export is gone again', async () => {
    const dataDir = newDir();
    const dpo: Principal = { tenant: 'acme', sub: 'dpo-1', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' };
    let elma: Elma = await open(dataDir);
    let requestId: string;
    try {
      await elma.runner.start();
      const { position } = await elma.ingest.ingest(principal, {
        events: [
          {
            subject: 'cust-li',
            occurredAt: '2026-11-20T10:00:00Z',
            activity: 'chat.turn',
            content: { text: '李女士对花生过敏。' },
            source: { system: 'crm', externalId: 'li-1' },
          },
        ],
      });
      await elma.runner.waitFor(BigInt(position));
      // What the workflow's activity does, here without Temporal: the export is produced and stored sealed.
      ({ requestId } = await elma.subjectAccess.request(dpo, { subject: 'cust-li' }, 'http-1'));
      const { subjectPseudonym } = await elma.subjectAccess.request(dpo, { subject: 'cust-li' }, 'http-2');
      await elma.subjectAccess.produce('acme', requestId);
      expect((await elma.subjectAccess.file(dpo, requestId, 'export.json', 'http-3')).toString('utf8')).toContain('花生');
      // An erasure of the subject completed after this backup: its ledger entry names the subject's pseudonym.
      await elma.erasure.ledger.record({
        formatVersion: 1,
        tenant: 'acme',
        requestId: 'q-erased-li',
        completedAt: '2026-12-01T10:00:00.000Z',
        recordIds: [],
        eventIds: [],
        deletedStreams: [],
        forgottenPseudonyms: [subjectPseudonym],
        tombstones: [],
        certificate: { keyId: 'k', signature: 's' },
      });
      await elma.erasure.ledger.requireReapply(0);
    } finally {
      await elma.close();
    }

    elma = await open(dataDir);
    try {
      await expect(elma.subjectAccess.file(dpo, requestId, 'export.json', 'http-4')).rejects.toMatchObject({
        code: 'SUBJECT_ACCESS.EXPORT_GONE',
      });
      expect((await elma.subjectAccess.progress(dpo, requestId)).status).toBe('erased');
    } finally {
      await elma.close();
    }
  });
});
