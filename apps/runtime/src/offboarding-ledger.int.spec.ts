import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT, isTenantOffboardingEntry, type Principal } from '@elma/domain';
import { tenantStreams } from '@elma/application';
import { listFiles, loadConfig, scanFiles, SqliteErasureLedger } from '@elma/infra';
import { silentLogger } from '@elma/shared';
import { openElma, type Elma } from './elma';

const agent = (tenant: string): Principal => ({ tenant, sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
const ops = (sub: string): Principal => ({ tenant: PLATFORM_TENANT, sub, roles: ['platform-admin'], purposes: [], clearance: 'internal' });
const at = () => ({ attempt: 1, startedAt: new Date().toISOString() });

/**
 * A tenant off-boarded after a backup stays off-boarded when the backup is restored: the off-boarding is an
 * entry of the erasure ledger, applied again on open (after `elma restore`) or by `elma erasures reapply`
 * (after a snapshot restored outside ELMA). Real SQLite files; the "backup" is a copy of the stopped folder.
 */
describe('openElma re-applies tenant off-boardings from the erasure ledger', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-offboard-ledger-'));
  const dataDir = join(root, 'data');
  const snapshot = join(root, 'snapshot');
  const ledgerPath = join(root, 'ledger', 'erasure-ledger.db');
  const GONE = ['陈女士的银行账号是6222020200112233，请勿外传。', 'Initech keeps the Quillfeather merger memo in vault seven.'];
  const KEPT = 'Globex ships the Marrowgate order on Friday.';
  const open = () =>
    openElma(loadConfig({ ELMA_EMBEDDER: 'hashing', ELMA_DATA_DIR: dataDir, ELMA_ERASURE_LEDGER: ledgerPath }), { logger: silentLogger });
  const scan = async () =>
    scanFiles(
      await listFiles([dataDir]),
      GONE.map((text, i) => ({ id: String(i), bytes: Buffer.from(text, 'utf8') })),
    );
  const restoreSnapshot = () => {
    rmSync(dataDir, { recursive: true, force: true });
    cpSync(snapshot, dataDir, { recursive: true });
  };
  async function using<T>(use: (elma: Elma) => Promise<T>): Promise<T> {
    const elma = await open();
    try {
      return await use(elma);
    } finally {
      await elma.close();
    }
  }
  let requestId = '';

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('records the off-boarding in the ledger when its certificate is issued (ids and signature only)', async () => {
    await using(async (elma) => {
      await elma.runner.start();
      const ingest = (tenant: string, texts: string[]) =>
        elma.ingest.ingest(agent(tenant), {
          events: texts.map((text, i) => ({
            subject: `cust-${tenant}`,
            occurredAt: `2026-11-2${i}T10:00:00Z`,
            activity: 'chat.turn',
            content: { text },
            source: { system: 'crm', externalId: `${tenant}-${i}` },
          })),
        });
      await ingest('initech', GONE);
      const { position } = await ingest('globex', [KEPT]);
      await elma.runner.waitFor(BigInt(position));
      const ids: string[] = [];
      for await (const entry of elma.index.lineage('initech')) ids.push(entry.id);
      // An erasure of the tenant recorded before its off-boarding: re-applied after it, it must not write into the
      // tenant's deleted streams.
      await elma.erasure.ledger.record({
        formatVersion: 1,
        tenant: 'initech',
        requestId: 'q-before',
        completedAt: '2026-11-30T10:00:00.000Z',
        recordIds: ids.slice(0, 1),
        eventIds: [],
        deletedStreams: [],
        forgottenPseudonyms: [],
        tombstones: ['f'.repeat(64)],
        certificate: { keyId: 'k', signature: 's' },
      });
    });
    cpSync(dataDir, snapshot, { recursive: true });

    await using(async (elma) => {
      ({ requestId } = await elma.offboarding.requests.request(ops('ops-1'), 'initech', { reason: 'contract_ended' }, 'r-1'));
      await elma.offboarding.requests.approve(ops('ops-2'), 'initech', requestId, 'r-2');
      const steps = elma.offboarding.steps;
      await steps.seal('initech', requestId, at());
      await steps.legalHoldCheck('initech', requestId, at());
      await steps.export('initech', requestId, at());
      await steps.destroyKey('initech', requestId, at());
      await steps.dropIndex('initech', requestId, at());
      await steps.deleteStreams('initech', requestId, at());
      const verification = await steps.verify('initech', requestId, 1, at());
      expect(verification.passed).toBe(true);
      const signed = await steps.certify('initech', requestId, { verification, rounds: 1 });
      // A retried step (a worker lost after the certificate was saved) returns the same certificate and records
      // nothing twice. (Removing the entry by hand to simulate the loss is now refused as tampering: the signed head.)
      expect(await steps.certify('initech', requestId, { verification, rounds: 1 })).toEqual(signed);
      const entries = (await elma.erasure.ledger.entries(0)).map((e) => e.entry);
      expect(entries).toHaveLength(2);
      expect(entries[1]).toEqual({
        formatVersion: 1,
        kind: 'tenant-offboarding',
        tenant: 'initech',
        requestId,
        completedAt: signed.certificate.issuedAt,
        certificate: { keyId: signed.signature.kid, signature: signed.signature.value },
      });
    });
    expect((await scan()).findings).toEqual([]);
  });

  it('after a restore, off-boards the tenant again on open, before anything serves; once in effect', async () => {
    restoreSnapshot();
    const ledger = SqliteErasureLedger.open(ledgerPath);
    await ledger.requireReapply(0);
    await ledger.close();
    // The restored folder holds the tenant again (the test can fail).
    expect((await scan()).findings.length).toBeGreaterThan(0);

    await using(async (elma) => {
      expect(await elma.erasure.ledger.pendingReapply()).toBeUndefined();
      expect(await elma.offboarding.closures.closure('initech', { fresh: true })).toBe('offboarded');
      expect(await elma.vault.isShredded('initech', 'any-key')).toBe(true);
      expect(await elma.index.tenants()).toEqual(['globex']);
      expect((await tenantStreams(elma.log, 'initech')).names).toEqual([]);
      expect(await elma.index.count('globex')).toBe(1);
      // One audit entry in the platform trail, ids only.
      const audited = [];
      for await (const entry of elma.audit.export(PLATFORM_TENANT, { resourceId: requestId })) audited.push(entry);
      expect(audited.filter((e) => e.decision.rule === 'offboard:reapply').map((e) => e.resourceIds)).toEqual([
        ['tenant:initech', requestId, 'reapplied'],
      ]);
      // Applied again by hand (`elma erasures reapply`): nothing left to do, the erasure of the tenant skipped.
      expect(await elma.erasure.reapply.reapplyAll()).toMatchObject({ checked: 2, erasures: 0, offboardings: 0, streamsDeleted: 0 });
    });
    expect((await scan()).findings).toEqual([]);
  });

  it('after a snapshot restored outside ELMA (no mark), `elma erasures reapply` does it', async () => {
    restoreSnapshot();
    await using(async (elma) => {
      // Nothing marked it: the open alone leaves the tenant as restored.
      expect(await elma.offboarding.closures.closure('initech', { fresh: true })).toBeUndefined();
      const offboardings = (await elma.erasure.ledger.entries(0)).filter((e) => isTenantOffboardingEntry(e.entry));
      const report = await elma.erasure.reapply.reapplyAll(offboardings[0]!.seq - 1);
      expect(report).toMatchObject({ checked: 1, offboardings: 1, tenantKeysDestroyed: 1, tenantIndexesDropped: 1 });
      expect(report.streamsDeleted).toBeGreaterThan(0);
      expect(await elma.offboarding.closures.closure('initech', { fresh: true })).toBe('offboarded');
      expect(await elma.index.tenants()).toEqual(['globex']);
    });
    expect((await scan()).findings).toEqual([]);
  });
});
