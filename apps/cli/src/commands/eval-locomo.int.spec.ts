import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { evalLocomoCommand } from './eval-locomo';

/**
 * `npm run eval:locomo` end to end on a made-up LoCoMo-shaped conversation
 * (the real data is evaluation-only and never enters the repository): two
 * samples, two sessions each, one of them in Chinese.
 */
const dir = mkdtempSync(join(tmpdir(), 'elma-locomo-fixture-'));
// The hashing embedder: no model to start, and the dense and fused rows must say why they are missing.
vi.stubEnv('ELMA_EMBEDDER', 'hashing');
afterAll(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

const sessions = [
  ['1:56 pm on 8 May, 2023', '3:10 pm on 20 May, 2023'],
  ['9:00 am on 2 June, 2023', '7:45 pm on 9 June, 2023'],
];
const lines: Record<string, string[][]> = {
  'conv-a': [
    ['Ana', 'I adopted a grey kitten called Pixel last week.'],
    ['Ben', 'Lovely! I started restoring an old sailboat.'],
    ['Ana', 'The kitten keeps chasing the vacuum cleaner.'],
    ['Ben', 'My sailboat needs a new mast before summer.'],
    ['Ana', 'I signed up for a pottery class on Thursdays.'],
    ['Ben', 'I finally painted the sailboat hull dark blue.'],
  ],
  'conv-b': [
    ['李雷', '我下个月要去上海出差，顺便看看外婆。'],
    ['韩梅', '我最近在学习弹钢琴，每天练习一个小时。'],
    ['李雷', 'Tell me about your piano teacher.'],
    ['韩梅', '我的钢琴老师是一位退休的音乐教授。'],
    ['李雷', '上海的天气最近很潮湿。'],
    ['韩梅', 'I bought a metronome yesterday.'],
  ],
};
const turns = Object.entries(lines).flatMap(([sample, said], s) =>
  said.map(([speaker, text], i) => {
    const session = i < 3 ? 1 : 2;
    return {
      sample_id: sample,
      session,
      session_datetime: sessions[s][session - 1],
      dia_id: `D${session}:${(i % 3) + 1}`,
      speaker,
      text,
      blip_caption: null,
    };
  }),
);
const questions = [
  { sample_id: 'conv-a', qa_index: 0, question: 'What is the name of the kitten Ana adopted?', category: 4, evidence: ['D1:1'] },
  { sample_id: 'conv-a', qa_index: 1, question: 'What colour did Ben paint the sailboat hull?', category: 4, evidence: ['D2:3'] },
  { sample_id: 'conv-a', qa_index: 2, question: 'What does Ben restore and what does it need?', category: 1, evidence: ['D1:2', 'D2:1'] },
  { sample_id: 'conv-a', qa_index: 3, question: 'Which day is the pottery class?', category: 2, evidence: ['D2:2'] },
  { sample_id: 'conv-a', qa_index: 4, question: 'Did Ana adopt a dog?', category: 5, evidence: [] },
  { sample_id: 'conv-a', qa_index: 5, question: 'Where does Ana live?', category: 3, evidence: ['D9:9'] },
  { sample_id: 'conv-b', qa_index: 0, question: '谁要去上海出差？', category: 4, evidence: ['D1:1'] },
  { sample_id: 'conv-b', qa_index: 1, question: '钢琴老师是谁？', category: 4, evidence: ['D2:1'] },
];
writeFileSync(join(dir, 'turns.jsonl'), turns.map((t) => JSON.stringify(t)).join('\n') + '\n');
writeFileSync(join(dir, 'qa.jsonl'), questions.map((q) => JSON.stringify(q)).join('\n') + '\n');

async function run(args: string[]): Promise<{ status: number; stdout: string }> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    written.push(String(chunk));
    return true;
  });
  try {
    const status = await evalLocomoCommand(args);
    return { status, stdout: written.join('') };
  } finally {
    spy.mockRestore();
  }
}

describe('eval:locomo on a LoCoMo-shaped fixture', () => {
  const report = join(dir, 'report.json');

  it('scores every runnable variant per category with R@10 intervals, and writes the same as JSON', async () => {
    const { status, stdout } = await run(['--data', dir, '--json', report, '--resamples', '200']);
    expect(status).toBe(0);
    const json = JSON.parse(readFileSync(report, 'utf8'));
    expect(json.embedder).toBe('hashing-v1');
    expect(json.turns).toBe(12);
    expect(json.memories).toBe(12);
    // One adversarial question left out; one whose evidence names no turn skipped.
    expect(json.questions).toEqual({ evaluated: 6, adversarial: 1, skipped: 1 });
    expect(json.bootstrap).toMatchObject({ resamples: 200 });

    const overall = json.rows.filter((r: { category: unknown }) => r.category === 'all');
    const ran = json.variants.filter((v: { unavailable: string | null }) => v.unavailable === null).map((v: { name: string }) => v.name);
    expect(overall.map((r: { route: string }) => r.route)).toEqual(ran);
    expect(ran).toEqual(['bm25', '+stop', '+stem', '+dates', '+smooth']);
    for (const row of json.rows) {
      expect(row.recall10Interval.low).toBeLessThanOrEqual(row.recall10);
      expect(row.recall10Interval.high).toBeGreaterThanOrEqual(row.recall10);
    }
    // Distinct words find their turn among the first five, in English and in Chinese, with every text
    // analysis; once stop words are dropped, first.
    const singleHop = json.rows.filter((r: { category: unknown }) => r.category === 4);
    expect(singleHop).toHaveLength(5);
    for (const row of singleHop) expect(row, row.route).toMatchObject({ n: 4, recall5: 1 });
    for (const row of singleHop.filter((r: { route: string }) => ['+stop', '+stem', '+dates'].includes(r.route)))
      expect(row.mrr, row.route).toBe(1);

    expect(stdout).toMatch(/embedder hashing-v1 \(not semantic/);
    expect(stdout).toMatch(/turn sessions passed on each event/);
    expect(stdout).toMatch(/^\s+\+stem over \+stop\s/m);
    expect(stdout).toMatch(/^all \(1-4\)\s+bm25\s+6\s/m);
    expect(stdout).toMatch(/^all \(1-4\)\s+dense\s+not available \(the embedder is not semantic\)/m);
  });

  it('prints the same figures and intervals on a second run', async () => {
    const first = JSON.parse(readFileSync(report, 'utf8'));
    const { status } = await run(['--data', dir, '--json', report, '--resamples', '200']);
    expect(status).toBe(0);
    const second = JSON.parse(readFileSync(report, 'utf8'));
    expect(second.rows).toEqual(first.rows);
    expect(second.gains).toEqual(first.gains);
  });

  it('refuses a missing data folder and a bad resample count', async () => {
    expect((await run(['--data', join(dir, 'nowhere')])).status).toBe(2);
    expect((await run(['--data', dir, '--resamples', '0'])).status).toBe(2);
  });
});
