import { describe, expect, it } from 'vitest';
import { SPLITS, crossesLanguages, loadSplit, type Tenant } from './data';

const han = /\p{Script=Han}/u;
const langOf = (text: string) => (han.test(text) ? 'zh' : 'en');
const parts = SPLITS.map((split) => ({ split, set: loadSplit(split) }));
const tenants: Tenant[] = parts.flatMap((p) => p.set.tenants);
const questions = tenants.flatMap((t) => t.questions.map((q) => ({ ...q, tenant: t })));
const cross = questions.filter((q) => crossesLanguages(q.direction));

/** mulberry32: the seeded generator the split rule names. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('the bilingual test set', () => {
  it('names every memory and question once, and each question expects memories of its own tenant', () => {
    const ids = tenants.flatMap((t) => [t.id, ...t.memories.map((m) => m.id), ...t.questions.map((q) => q.id)]);
    expect(new Set(ids).size).toBe(ids.length);
    for (const q of questions) {
      const own = new Set(q.tenant.memories.map((m) => m.id));
      expect(
        q.expected.filter((id) => !own.has(id)),
        q.id,
      ).toEqual([]);
    }
  });

  it('labels each text with its language and each question with its direction: its language → its memory’s', () => {
    for (const t of tenants) for (const m of t.memories) expect(m.lang, m.id).toBe(langOf(m.text));
    for (const q of questions) {
      expect(q.lang, q.id).toBe(langOf(q.query));
      for (const id of q.expected) expect(q.direction, q.id).toBe(`${q.lang}→${q.tenant.memories.find((m) => m.id === id)!.lang}`);
    }
  });

  it('asks about at least 200 facts across languages, about half in each direction, and at least 60 within one', () => {
    expect(new Set(cross.flatMap((q) => q.expected)).size).toBeGreaterThanOrEqual(200);
    const enToZh = cross.filter((q) => q.direction === 'en→zh').length / cross.length;
    expect(enToZh).toBeGreaterThan(0.4);
    expect(enToZh).toBeLessThan(0.6);
    expect(questions.filter((q) => !crossesLanguages(q.direction)).length).toBeGreaterThanOrEqual(60);
    for (const direction of ['en→en', 'zh→zh'] as const)
      expect(questions.filter((q) => q.direction === direction).length, direction).toBeGreaterThanOrEqual(30);
  });

  it('holds tenants of about 50 memories that mix both languages and carry the controls too', () => {
    for (const t of tenants) {
      expect(t.memories.length, t.id).toBeGreaterThanOrEqual(40);
      expect(t.memories.length, t.id).toBeLessThanOrEqual(60);
      const zh = t.memories.filter((m) => m.lang === 'zh').length / t.memories.length;
      expect(zh, t.id).toBeGreaterThan(0.3);
      expect(zh, t.id).toBeLessThan(0.7);
      expect(
        t.questions.some((q) => !crossesLanguages(q.direction)),
        t.id,
      ).toBe(true);
    }
  });

  it('seals a third of the questions, whole tenants drawn by the seeded shuffle its split rule states', () => {
    const sealed = parts.find((p) => p.split === 'sealed')!.set;
    expect(sealed.notice).toMatch(/not to be read while tuning/);
    const share = sealed.tenants.flatMap((t) => t.questions).length / questions.length;
    expect(share).toBeGreaterThan(0.3);
    expect(share).toBeLessThan(0.37);
    // The nine tenants in the order they were written (t1…t9), shuffled by Fisher-Yates with mulberry32(39).
    const order = tenants.map((t) => t.id).sort((a, b) => Number(/^t(\d+)/.exec(a)![1]) - Number(/^t(\d+)/.exec(b)![1]));
    const random = mulberry32(39);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    expect(sealed.tenants.map((t) => t.id).sort()).toEqual(order.slice(0, 3).sort());
    expect(sealed.splitRule).toMatch(/mulberry32 seeded 39/);
  });
});
