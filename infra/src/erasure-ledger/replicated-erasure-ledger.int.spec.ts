import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { ErasureLedgerEntry } from '@elma/domain';
import { CertificateSigner } from '../certificate/signing';
import { ledgerHeadSigner } from '../certificate/ledger-head';
import { openErasureLedger, type LedgerHealing } from './replicated-erasure-ledger';

const entry = (requestId: string): ErasureLedgerEntry => ({
  formatVersion: 1,
  tenant: 'acme',
  requestId,
  completedAt: '2026-12-01T10:00:00.000Z',
  recordIds: [`r-${requestId}`],
  eventIds: [],
  deletedStreams: [],
  forgottenPseudonyms: [],
  tombstones: [],
  certificate: { keyId: 'k1', signature: 'c2ln' },
});

const signer = ledgerHeadSigner(new CertificateSigner({ masterKey: new Uint8Array(32).fill(3) }));

describe('the erasure ledger with its replica', () => {
  const dirs: string[] = [];
  const paths = () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-replica-'));
    dirs.push(dir);
    return { dir, erasureLedger: join(dir, 'a', 'erasure-ledger.db'), erasureLedgerReplica: join(dir, 'b', 'erasure-ledger.db') };
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  /** Opens both copies, records the entries, closes: what a running ELMA leaves. */
  const written = async (where: ReturnType<typeof paths>, ...requestIds: string[]) => {
    const ledger = openErasureLedger(where);
    await ledger.attest(signer);
    for (const id of requestIds) await ledger.record(entry(id));
    const mark = await ledger.mark();
    await ledger.close();
    return mark;
  };
  const reopen = async (where: ReturnType<typeof paths>) => {
    const healed: LedgerHealing[] = [];
    const ledger = openErasureLedger(where, { onHealed: (h) => healed.push(h) });
    await ledger.attest(signer);
    const mark = await ledger.mark();
    const ids = (await ledger.entries(0)).map((e) => e.entry.requestId);
    await ledger.close();
    return { healed, mark, ids };
  };

  it('rebuilds an emptied, deleted or damaged copy from the other, keeping a damaged one aside', async () => {
    const where = paths();
    const mark = await written(where, 'q-1', 'q-2');

    writeFileSync(where.erasureLedger, '');
    let opened = await reopen(where);
    expect(opened.mark).toEqual(mark);
    expect(opened.ids).toEqual(['q-1', 'q-2']);
    expect(opened.healed).toMatchObject([{ healed: where.erasureLedger, reason: 'unreadable', entries: 2 }]);
    expect(readdirSync(join(where.dir, 'a')).some((name) => name.startsWith('erasure-ledger.db.unreadable-'))).toBe(true);

    rmSync(where.erasureLedgerReplica);
    opened = await reopen(where);
    expect(opened.healed).toMatchObject([{ healed: where.erasureLedgerReplica, reason: 'missing', entries: 2 }]);
    expect(existsSync(where.erasureLedgerReplica)).toBe(true);
    expect((await reopen(where)).healed).toEqual([]);
  });

  it('extends a copy that is behind (an older copy put back, a crash between the two writes)', async () => {
    const where = paths();
    await written(where, 'q-1');
    const older = join(where.dir, 'older.db');
    copyFileSync(where.erasureLedger, older);
    const mark = await written(where, 'q-2', 'q-3');
    copyFileSync(older, where.erasureLedger);

    const opened = await reopen(where);
    expect(opened.healed).toMatchObject([{ healed: where.erasureLedger, reason: 'behind', entries: 2 }]);
    expect(opened.mark).toEqual(mark);
    expect(opened.ids).toEqual(['q-1', 'q-2', 'q-3']);
  });

  it('replaces a new, empty ledger made beside a replica that holds entries (the file deleted, then a start)', async () => {
    const where = paths();
    const mark = await written(where, 'q-1');
    rmSync(where.erasureLedger);
    // What a start of an older ELMA, or a mistaken path, would leave: a fresh ledger of another identity.
    const fresh = openErasureLedger({ erasureLedger: where.erasureLedger });
    await fresh.close();
    const opened = await reopen(where);
    expect(opened.mark).toEqual(mark);
  });

  it('refuses two copies that disagree, and never picks one', async () => {
    const where = paths();
    await written(where, 'q-1');
    const replica = new Database(where.erasureLedgerReplica);
    replica.prepare(`UPDATE ledger_meta SET value = 'another-ledger' WHERE key = 'id'`).run();
    replica.close();
    expect(() => openErasureLedger(where)).toThrow(expect.objectContaining({ code: 'ERASURE_LEDGER.UNREADABLE' }));

    const diverged = paths();
    await written(diverged, 'q-1');
    const copy = join(diverged.dir, 'copy.db');
    copyFileSync(diverged.erasureLedgerReplica, copy);
    await written(diverged, 'q-2');
    // The replica goes back one entry and takes another one: neither copy continues the other.
    copyFileSync(copy, diverged.erasureLedgerReplica);
    const alone = openErasureLedger({ erasureLedger: diverged.erasureLedgerReplica });
    await alone.attest(signer);
    await alone.record(entry('q-other'));
    await alone.close();
    expect(() => openErasureLedger(diverged)).toThrow(/disagree/);
  });
});
