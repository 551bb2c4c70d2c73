import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyShredded, SUBJECT_PSEUDONYM, TenantDestroyed, type KeyRotation, type KeyVault } from '@elma/domain';

export interface KeyVaultUnderTest {
  vault: KeyVault;
  cleanup(): Promise<void>;
}

/** The guarantees every KeyVault adapter must keep. Each test starts from an empty vault. */
export function keyVaultContract(name: string, factory: () => Promise<KeyVaultUnderTest>): void {
  describe(`${name} key vault contract`, () => {
    let subject: KeyVaultUnderTest;
    let vault: KeyVault;

    beforeEach(async () => {
      subject = await factory();
      vault = subject.vault;
    });

    afterEach(async () => {
      await subject.cleanup();
    });

    describe('data keys', () => {
      it('a created key is 32 bytes and a record keeps it on later calls', async () => {
        const first = await vault.dataKeys('t1', ['m1'], { create: true });

        const again = await vault.dataKeys('t1', ['m1'], { create: true });
        const read = await vault.dataKeys('t1', ['m1'], { create: false });

        expect(first.get('m1')).toHaveLength(32);
        expect(again.get('m1')).toEqual(first.get('m1'));
        expect(read.get('m1')).toEqual(first.get('m1'));
      });

      it('every record and every tenant gets its own key', async () => {
        const t1 = await vault.dataKeys('t1', ['m1', 'm2'], { create: true });
        const t2 = await vault.dataKeys('t2', ['m1'], { create: true });

        const keys = [t1.get('m1'), t1.get('m2'), t2.get('m1')].map((k) => Buffer.from(k!).toString('hex'));
        expect(new Set(keys).size).toBe(3);
      });

      it('a batch returns every requested record, creating only the missing ones', async () => {
        const existing = await vault.dataKeys('t1', ['m1'], { create: true });

        const batch = await vault.dataKeys('t1', ['m1', 'm2', 'm3'], { create: true });

        expect([...batch.keys()]).toEqual(['m1', 'm2', 'm3']);
        expect(batch.get('m1')).toEqual(existing.get('m1'));
        expect((await vault.dataKeys('t1', ['m2', 'm3'], { create: false })).get('m3')).toEqual(batch.get('m3'));
      });

      it('without create a missing key is not found and nothing is created', async () => {
        await vault.dataKeys('t1', ['m1'], { create: true });

        await expect(vault.dataKeys('t1', ['m1', 'm2'], { create: false })).rejects.toMatchObject({
          code: 'KEY_VAULT.KEY_NOT_FOUND',
        });
        await expect(vault.dataKeys('t9', ['m1'], { create: false })).rejects.toMatchObject({
          code: 'KEY_VAULT.KEY_NOT_FOUND',
        });
        await expect(vault.dataKeys('t1', ['m2'], { create: false })).rejects.toMatchObject({
          code: 'KEY_VAULT.KEY_NOT_FOUND',
        });
      });
    });

    describe('shredding', () => {
      it('a shredded record raises KeyShredded, even when asked to create', async () => {
        await vault.dataKeys('t1', ['m1', 'm2'], { create: true });

        await vault.shred('t1', ['m1']);

        await expect(vault.dataKeys('t1', ['m1'], { create: false })).rejects.toBeInstanceOf(KeyShredded);
        await expect(vault.dataKeys('t1', ['m1'], { create: true })).rejects.toMatchObject({
          code: 'KEY_VAULT.KEY_SHREDDED',
          recordId: 'm1',
        });
        expect(await vault.isShredded('t1', 'm1')).toBe(true);
        expect(await vault.isShredded('t1', 'm2')).toBe(false);
      });

      it('shredding one record leaves the others and other tenants readable', async () => {
        const before = await vault.dataKeys('t1', ['m1', 'm2'], { create: true });
        const other = await vault.dataKeys('t2', ['m1'], { create: true });

        await vault.shred('t1', ['m1']);

        expect((await vault.dataKeys('t1', ['m2'], { create: false })).get('m2')).toEqual(before.get('m2'));
        expect((await vault.dataKeys('t2', ['m1'], { create: false })).get('m1')).toEqual(other.get('m1'));
      });

      it('a batch containing a shredded record fails whole and creates none of the others', async () => {
        await vault.shred('t1', ['m1']);

        await expect(vault.dataKeys('t1', ['m2', 'm1', 'm3'], { create: true })).rejects.toBeInstanceOf(KeyShredded);

        await expect(vault.dataKeys('t1', ['m2'], { create: false })).rejects.toMatchObject({
          code: 'KEY_VAULT.KEY_NOT_FOUND',
        });
      });

      it('shredding a record that never had a key prevents one from ever being created', async () => {
        await vault.shred('t1', ['never']);

        await expect(vault.dataKeys('t1', ['never'], { create: true })).rejects.toBeInstanceOf(KeyShredded);
        expect(await vault.isShredded('t1', 'never')).toBe(true);
      });

      it('names the shredded ids of a batch, and every id once the tenant is destroyed', async () => {
        await vault.dataKeys('t1', ['s-1', 's-2', 's-3'], { create: true });
        await vault.shred('t1', ['s-2', 'never-keyed']);

        expect(await vault.shreddedAmong('t1', ['s-1', 's-2', 's-3', 'never-keyed'])).toEqual(new Set(['s-2', 'never-keyed']));
        expect(await vault.shreddedAmong('t2', ['s-2'])).toEqual(new Set());
        await vault.destroyTenant('t1');
        expect(await vault.shreddedAmong('t1', ['s-1', 'x'])).toEqual(new Set(['s-1', 'x']));
      });

      it('shredding is idempotent', async () => {
        await vault.dataKeys('t1', ['m1'], { create: true });

        await vault.shred('t1', ['m1']);
        await vault.shred('t1', ['m1']);

        expect(await vault.isShredded('t1', 'm1')).toBe(true);
      });
    });

    describe('destroying a tenant', () => {
      it('every key access of the tenant raises TenantDestroyed afterwards', async () => {
        await vault.dataKeys('t1', ['m1', 'm2'], { create: true });

        await vault.destroyTenant('t1');

        await expect(vault.dataKeys('t1', ['m1'], { create: false })).rejects.toBeInstanceOf(TenantDestroyed);
        await expect(vault.dataKeys('t1', ['m3'], { create: true })).rejects.toMatchObject({
          code: 'KEY_VAULT.TENANT_DESTROYED',
        });
        expect(await vault.isShredded('t1', 'm1')).toBe(true);
      });

      it('other tenants keep their keys', async () => {
        await vault.dataKeys('t1', ['m1'], { create: true });
        const kept = await vault.dataKeys('t2', ['m1'], { create: true });

        await vault.destroyTenant('t1');

        expect((await vault.dataKeys('t2', ['m1'], { create: false })).get('m1')).toEqual(kept.get('m1'));
      });

      it('is idempotent and works for a tenant that never had keys', async () => {
        await vault.destroyTenant('t1');
        await vault.destroyTenant('t1');

        await expect(vault.dataKeys('t1', ['m1'], { create: true })).rejects.toBeInstanceOf(TenantDestroyed);
      });
    });

    describe('subject pseudonyms', () => {
      it('a subject gets one random pseudonym, kept on later calls, and read back without creating', async () => {
        const first = await vault.subjectPseudonyms('t1', ['alice', 'bob', 'alice'], { create: true });
        const again = await vault.subjectPseudonyms('t1', ['alice'], { create: true });
        const read = await vault.subjectPseudonyms('t1', ['alice', 'carol'], { create: false });

        expect(first.get('alice')).toMatch(SUBJECT_PSEUDONYM);
        expect(first.get('bob')).toMatch(SUBJECT_PSEUDONYM);
        expect(first.get('alice')).not.toBe(first.get('bob'));
        expect(again.get('alice')).toBe(first.get('alice'));
        expect(read.get('alice')).toBe(first.get('alice'));
        expect(read.has('carol')).toBe(false);
        expect(await vault.subjectsOfPseudonyms('t1', [first.get('alice')!, 'psn_unknown'])).toEqual(
          new Map([[first.get('alice')!, 'alice']]),
        );
      });

      it('concurrent first writes of a subject get the same pseudonym', async () => {
        const all = await Promise.all(Array.from({ length: 20 }, () => vault.subjectPseudonyms('t1', ['alice'], { create: true })));

        expect(new Set(all.map((m) => m.get('alice'))).size).toBe(1);
      });

      it('each tenant maps a subject on its own', async () => {
        const t1 = await vault.subjectPseudonyms('t1', ['alice'], { create: true });
        const t2 = await vault.subjectPseudonyms('t2', ['alice'], { create: true });

        expect(t1.get('alice')).not.toBe(t2.get('alice'));
        expect(await vault.subjectsOfPseudonyms('t2', [t1.get('alice')!])).toEqual(new Map());
      });

      it('forgetting a subject destroys the mapping both ways; a later write gets a fresh pseudonym', async () => {
        const before = (await vault.subjectPseudonyms('t1', ['alice', 'bob'], { create: true })).get('alice')!;

        expect(await vault.forgetSubject('t1', 'alice')).toBe(before);
        expect(await vault.forgetSubject('t1', 'alice')).toBeUndefined();

        expect((await vault.subjectPseudonyms('t1', ['alice'], { create: false })).has('alice')).toBe(false);
        expect(await vault.subjectsOfPseudonyms('t1', [before])).toEqual(new Map());
        const after = (await vault.subjectPseudonyms('t1', ['alice'], { create: true })).get('alice');
        expect(after).toMatch(SUBJECT_PSEUDONYM);
        expect(after).not.toBe(before);
        expect((await vault.subjectPseudonyms('t1', ['bob'], { create: false })).has('bob')).toBe(true);
      });

      it('a destroyed tenant has no pseudonyms and gets none', async () => {
        const kept = await vault.subjectPseudonyms('t1', ['alice'], { create: true });

        await vault.destroyTenant('t1');

        expect(await vault.subjectPseudonyms('t1', ['alice'], { create: false })).toEqual(new Map());
        expect(await vault.subjectsOfPseudonyms('t1', [kept.get('alice')!])).toEqual(new Map());
        await expect(vault.subjectPseudonyms('t1', ['alice'], { create: true })).rejects.toBeInstanceOf(TenantDestroyed);
      });
    });
  });
}

export interface KeyRotationUnderTest {
  vault: KeyVault & KeyRotation;
  cleanup(): Promise<void>;
}

/**
 * The guarantees of the optional `KeyRotation` port, for an adapter that
 * implements it (the SQLite vault; a key-management server's adapter may).
 */
export function keyRotationContract(name: string, factory: () => Promise<KeyRotationUnderTest>): void {
  describe(`${name} key rotation contract`, () => {
    let subject: KeyRotationUnderTest;
    let vault: KeyVault & KeyRotation;

    beforeEach(async () => {
      subject = await factory();
      vault = subject.vault;
    });

    afterEach(async () => {
      await subject.cleanup();
    });

    const finish = async (tenant: string, batchSize: number) => {
      let batches = 0;
      for (;;) {
        batches++;
        const { rewrapped, status } = await vault.rewrapTenant(tenant, batchSize);
        if (rewrapped < batchSize && status.retiring.length === 0) return batches;
        if (batches > 1000) throw new Error('rotation does not finish');
      }
    };

    it('a rotation keeps every data key and pseudonym, keeps working during the rotation, and ends with one version', async () => {
      const ids = Array.from({ length: 25 }, (_, i) => `m${i}`);
      const keys = await vault.dataKeys('t1', ids, { create: true });
      const pseudonyms = await vault.subjectPseudonyms('t1', ['alice', '王芳'], { create: true });
      const before = await vault.tenantKeyStatus('t1');

      const started = await vault.beginTenantRotation('t1');
      expect(started.current).toBe(before.current! + 1);
      expect(started.retiring).toEqual([before.current]);
      await vault.rewrapTenant('t1', 10);
      const fresh = await vault.dataKeys('t1', ['during'], { create: true });
      expect(await vault.dataKeys('t1', ids, { create: false })).toEqual(keys);
      expect(await finish('t1', 10)).toBeGreaterThanOrEqual(2);

      expect(await vault.tenantKeyStatus('t1')).toEqual({ tenant: 't1', current: started.current, retiring: [], remaining: 0 });
      expect(await vault.dataKeys('t1', [...ids, 'during'], { create: false })).toEqual(
        new Map([...keys, ['during', fresh.get('during')!]]),
      );
      expect(await vault.subjectPseudonyms('t1', ['alice', '王芳'], { create: false })).toEqual(pseudonyms);
      expect(await vault.subjectsOfPseudonyms('t1', [...pseudonyms.values()])).toEqual(new Map([...pseudonyms].map(([s, p]) => [p, s])));
    });

    it('asking again during a rotation resumes it; other tenants are untouched; shredding and forgetting still work', async () => {
      await vault.dataKeys('t1', ['m1', 'm2'], { create: true });
      const other = await vault.dataKeys('t2', ['m1'], { create: true });
      const first = await vault.beginTenantRotation('t1');
      expect(await vault.beginTenantRotation('t1')).toMatchObject({ current: first.current, retiring: first.retiring });
      expect((await vault.tenantKeyStatus('t2')).retiring).toEqual([]);
      await vault.shred('t1', ['m1']);
      await vault.subjectPseudonyms('t1', ['bob'], { create: true });
      await vault.forgetSubject('t1', 'bob');
      await finish('t1', 1);
      await expect(vault.dataKeys('t1', ['m1'], { create: false })).rejects.toBeInstanceOf(KeyShredded);
      expect(await vault.subjectPseudonyms('t1', ['bob'], { create: false })).toEqual(new Map());
      expect(await vault.dataKeys('t2', ['m1'], { create: false })).toEqual(other);
    });

    it('a destroyed tenant cannot be rotated', async () => {
      await vault.dataKeys('t1', ['m1'], { create: true });
      await vault.destroyTenant('t1');
      await expect(vault.beginTenantRotation('t1')).rejects.toBeInstanceOf(TenantDestroyed);
    });
  });
}
