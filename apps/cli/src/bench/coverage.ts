/**
 * Context coverage (packing, docs/architecture.md#read-path-recall): on a seeded synthetic workload whose
 * questions each have known aspects, the share of aspects that make it into
 * the packed context at a token budget, for the marginal-utility packer and
 * for plain top-k truncation of the same candidates.
 */
import { packByMarginalUtility, packProfile, type MemoryKind, type PackCandidate, type SourceTrust } from '@elma/domain';
import { makeRecord } from '@elma/domain/testing';
import { countTokens } from '@elma/shared';
import { prng, sentence } from './corpus';

export interface CoverageRow {
  budget: number;
  /** Mean share of each question's aspects covered by the packer's choice, 0..1. */
  packer: number;
  /** Mean share covered by top-k truncation, 0..1. */
  topK: number;
  /** packer / topK. */
  ratio: number;
}

export type AspectId = 'delivery' | 'contact' | 'price' | 'risk' | 'term' | 'payment' | 'warehouse' | 'sla';

export type CandidateRole = 'duplicate' | 'aspect' | 'rambling' | 'irrelevant';

export interface CoverageCandidate extends PackCandidate {
  /** Ground truth: the aspects of the question this memory states. */
  aspects: readonly AspectId[];
  role: CandidateRole;
}

export interface CoverageQuestion {
  language: 'en' | 'zh';
  /** The query's point in business time. */
  at: string;
  aspects: readonly AspectId[];
  /** In retrieval order: relevance descending, the best hit normalised to 1. */
  candidates: readonly CoverageCandidate[];
}

type Random = () => number;
type Phrase = (account: string, value: string) => string;

interface AspectSpec {
  value: (random: Random, chinese: boolean) => string;
  en: Phrase[];
  zh: Phrase[];
}

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)];
const between = (random: Random, low: number, high: number) => low + random() * (high - low);
const intBetween = (random: Random, low: number, high: number) => low + Math.floor(random() * (high - low + 1));

const ASPECTS: Record<AspectId, AspectSpec> = {
  delivery: {
    value: (random, zh) => {
      const month = intBetween(random, 1, 12);
      const day = intBetween(random, 1, 28);
      return zh ? `2026年${month}月${day}日` : `2026-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
    },
    en: [
      (a, v) => `Delivery to ${a} is scheduled for ${v}.`,
      (a, v) => `${a} expects the shipment on ${v}.`,
      (a, v) => `The agreed delivery date for ${a} is ${v}.`,
    ],
    zh: [(a, v) => `${a}的交付日期定在${v}。`, (a, v) => `${a}预计在${v}收到发货。`, (a, v) => `与${a}约定的交付日期是${v}。`],
  },
  contact: {
    value: (random, zh) =>
      pick(
        random,
        zh
          ? ['王丽', '陈伟', '李娜', '张强', '刘洋', '赵敏']
          : ['Anna Weber', 'Tom Becker', 'Maria Rossi', 'Jonas Klein', 'Sara Lind', 'Paul Novak'],
      ),
    en: [
      (a, v) => `The contact person at ${a} is ${v}.`,
      (a, v) => `${v} is our point of contact at ${a}.`,
      (a, v) => `Questions for ${a} go to ${v}.`,
    ],
    zh: [(a, v) => `${a}的联系人是${v}。`, (a, v) => `${v}是我们在${a}的对接人。`, (a, v) => `${a}的问题请找${v}。`],
  },
  price: {
    value: (random, zh) => (zh ? `每件${intBetween(random, 20, 900)}元` : `${intBetween(random, 20, 900)} EUR per unit`),
    en: [(a, v) => `The agreed price for ${a} is ${v}.`, (a, v) => `${a} pays ${v}.`, (a, v) => `Pricing for ${a} was settled at ${v}.`],
    zh: [(a, v) => `${a}的约定价格是${v}。`, (a, v) => `${a}按${v}付费。`, (a, v) => `${a}的定价最终定为${v}。`],
  },
  risk: {
    value: (random, zh) =>
      pick(
        random,
        zh
          ? ['供应商产能不足', '海关清关延误', '关键工程师离职', '汇率波动']
          : ['supplier capacity shortfall', 'customs clearance delays', 'key engineer leaving', 'currency swings'],
      ),
    en: [(a, v) => `The main risk for ${a} is ${v}.`, (a, v) => `For ${a}, watch out for ${v}.`, (a, v) => `${a} is exposed to ${v}.`],
    zh: [(a, v) => `${a}的主要风险是${v}。`, (a, v) => `${a}需要注意${v}。`, (a, v) => `${a}面临${v}的风险。`],
  },
  term: {
    value: (random, zh) => (zh ? `${pick(random, [12, 24, 36])}个月` : `${pick(random, [12, 24, 36])} months`),
    en: [
      (a, v) => `The ${a} contract runs for ${v}.`,
      (a, v) => `${a} signed for a term of ${v}.`,
      (a, v) => `Contract term with ${a}: ${v}.`,
    ],
    zh: [(a, v) => `${a}的合同期限为${v}。`, (a, v) => `${a}签了${v}的合同。`, (a, v) => `与${a}的合同期是${v}。`],
  },
  payment: {
    value: (random, zh) => (zh ? `${pick(random, [30, 45, 60, 90])}天` : `net ${pick(random, [30, 45, 60, 90])} days`),
    en: [(a, v) => `${a} pays invoices ${v}.`, (a, v) => `Payment terms for ${a} are ${v}.`, (a, v) => `Invoices to ${a} are due ${v}.`],
    zh: [(a, v) => `${a}的付款账期是${v}。`, (a, v) => `${a}在${v}内支付发票。`, (a, v) => `给${a}的发票账期为${v}。`],
  },
  warehouse: {
    value: (random, zh) => pick(random, zh ? ['上海', '柏林', '东京', '伦敦'] : ['Shanghai', 'Berlin', 'Tokyo', 'London']),
    en: [
      (a, v) => `${a} orders ship from the ${v} warehouse.`,
      (a, v) => `The ${v} warehouse serves ${a}.`,
      (a, v) => `Stock for ${a} is held in ${v}.`,
    ],
    zh: [(a, v) => `${a}的订单从${v}仓库发货。`, (a, v) => `${v}仓库负责${a}。`, (a, v) => `${a}的库存放在${v}。`],
  },
  sla: {
    value: (random, zh) => (zh ? `${pick(random, [2, 4, 8, 24])}小时` : `${pick(random, [2, 4, 8, 24])} hours`),
    en: [
      (a, v) => `${a} has a support response time of ${v}.`,
      (a, v) => `Our SLA with ${a} promises a reply within ${v}.`,
      (a, v) => `Tickets from ${a} must be answered in ${v}.`,
    ],
    zh: [(a, v) => `${a}的支持响应时间是${v}。`, (a, v) => `我们对${a}承诺${v}内回复。`, (a, v) => `${a}的工单须在${v}内响应。`],
  },
};

const ASPECT_IDS = Object.keys(ASPECTS) as AspectId[];

const ACCOUNTS = {
  en: ['Northwind', 'Contoso', 'Fabrikam', 'Globex', 'Initech', 'Umbrella', 'Hooli', 'Vandelay'],
  zh: ['华星', '远航', '恒泰', '新宇', '博达', '金桥', '瑞丰', '天成'],
};

/** Restatements of one fact: the same sentence with a different lead-in, as repeated chat turns produce. */
const LEAD_INS = {
  en: ['', 'Reminder: ', 'Per the last call, ', 'Confirmed again: ', 'Note: ', 'As agreed, ', 'Update: ', 'FYI: '],
  zh: ['', '提醒：', '根据上次电话，', '再次确认：', '备注：', '按约定，', '更新：', '供参考：'],
};

// Metadata is drawn independently of ground truth, so the packer gains nothing from it that top-k lacks.
const KINDS: MemoryKind[] = ['episodic', 'episodic', 'semantic', 'semantic', 'relational'];
const TRUSTS: SourceTrust[] = ['user', 'user', 'model', 'external', 'certified', 'authoritative'];

const DIMENSIONS = 64;
const AT = '2026-06-01T00:00:00.000Z';
const DAY_MS = 86_400_000;

function gaussian(random: Random): number {
  // Box–Muller; 1 - u keeps the logarithm finite.
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

function unitVector(random: Random): Float32Array {
  return normalise(Array.from({ length: DIMENSIONS }, () => gaussian(random)));
}

function normalise(values: ArrayLike<number>): Float32Array {
  const norm = Math.hypot(...Array.from(values));
  return Float32Array.from(values, (x) => x / norm);
}

/** `base` pulled `noise` of the way toward a fresh random direction: about 1/(1 + noise²) cosine to `base`. */
function near(random: Random, base: Float32Array, weight: number, noise: number): Float32Array {
  const direction = unitVector(random);
  return normalise(base.map((x, i) => weight * x + noise * direction[i]));
}

function question(random: Random, index: number, language: 'en' | 'zh'): CoverageQuestion {
  const zh = language === 'zh';
  const account = pick(random, ACCOUNTS[language]);
  const aspects = shuffle(random, ASPECT_IDS).slice(0, intBetween(random, 3, 6));
  const values = new Map(aspects.map((a) => [a, ASPECTS[a].value(random, zh)]));
  const bases = new Map(aspects.map((a) => [a, unitVector(random)]));
  const statement = (aspect: AspectId) => pick(random, ASPECTS[aspect][language])(account, values.get(aspect)!);
  const filler = (sentences: number) => Array.from({ length: sentences }, () => sentence(random, zh));
  const joined = (parts: string[]) => parts.join(zh ? '' : ' ');

  const drafts: { text: string; aspects: AspectId[]; role: CandidateRole; relevance: number; vector: Float32Array }[] = [];
  const [popular, ...others] = aspects;
  // The most popular aspect is restated again and again: high relevance, near-identical vectors.
  const popularStatement = statement(popular);
  for (const leadIn of shuffle(random, LEAD_INS[language]).slice(0, intBetween(random, 4, 8))) {
    drafts.push({
      text: `${leadIn}${popularStatement}`,
      aspects: [popular],
      role: 'duplicate',
      relevance: between(random, 0.82, 0.98),
      vector: near(random, bases.get(popular)!, 1, 0.2),
    });
  }
  // Each other aspect in one to three short memories, at a relevance of its own.
  for (const aspect of others) {
    const salience = between(random, 0.35, 0.85);
    for (let n = intBetween(random, 1, 3); n > 0; n--) {
      drafts.push({
        text: joined([statement(aspect), ...filler(intBetween(random, 0, 1))]),
        aspects: [aspect],
        role: 'aspect',
        relevance: salience + between(random, -0.08, 0.08),
        vector: near(random, bases.get(aspect)!, 1, 0.5),
      });
    }
  }
  // Long transcripts that mention one aspect somewhere in the middle; they match many query terms, so they rank well.
  for (let n = intBetween(random, 2, 5); n > 0; n--) {
    const aspect = pick(random, aspects);
    const before = filler(intBetween(random, 4, 10));
    const after = filler(intBetween(random, 4, 10));
    drafts.push({
      text: joined([...before, statement(aspect), ...after]),
      aspects: [aspect],
      role: 'rambling',
      relevance: between(random, 0.5, 0.9),
      vector: near(random, bases.get(aspect)!, 0.6, 1),
    });
  }
  const total = intBetween(random, 30, 60);
  while (drafts.length < total) {
    drafts.push({
      text: joined(filler(intBetween(random, 1, 2))),
      aspects: [],
      role: 'irrelevant',
      relevance: between(random, 0.15, 0.6),
      vector: unitVector(random),
    });
  }

  // Retrieval order; the sort is stable, so ties keep draft order and the result stays deterministic.
  drafts.sort((a, b) => b.relevance - a.relevance);
  const best = drafts[0].relevance;
  const candidates = drafts.map((draft, rank): CoverageCandidate => {
    const record = makeRecord({
      id: `cov-${index}-${rank}`,
      tenant: 'bench',
      subject: `account-${index}`,
      text: draft.text,
      kind: pick(random, KINDS),
      sourceTrust: pick(random, TRUSTS),
      confidence: Number(between(random, 0.5, 0.95).toFixed(2)),
      validFrom: new Date(Date.parse(AT) - intBetween(random, 0, 180) * DAY_MS).toISOString(),
    });
    return { record, vector: draft.vector, relevance: draft.relevance / best, aspects: draft.aspects, role: draft.role };
  });
  return { language, at: AT, aspects, candidates };
}

function shuffle<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** The seeded workload: the same questions for the same seed, alternately English and Chinese. */
export function coverageWorkload(seed: number, questions: number): CoverageQuestion[] {
  const random = prng(seed);
  return Array.from({ length: questions }, (_, i) => question(random, i, i % 2 === 0 ? 'en' : 'zh'));
}

/** Tokens a candidate costs, as the packer charges them (at least one). */
export const candidateTokens = (candidate: PackCandidate) => Math.max(1, Math.ceil(countTokens(candidate.record.content.text)));

/** Plain truncation: candidates in retrieval order until the first one that does not fit. */
export function truncateTopK(question: CoverageQuestion, budgetTokens: number): CoverageCandidate[] {
  const chosen: CoverageCandidate[] = [];
  let used = 0;
  for (const candidate of question.candidates) {
    const tokens = candidateTokens(candidate);
    if (used + tokens > budgetTokens) break;
    chosen.push(candidate);
    used += tokens;
  }
  return chosen;
}

/** The marginal-utility packer with the default profile and the real token counter. */
export function packForCoverage(question: CoverageQuestion, budgetTokens: number): CoverageCandidate[] {
  const byId = new Map(question.candidates.map((c) => [c.record.id, c]));
  const packed = packByMarginalUtility(question.candidates, {
    budgetTokens,
    at: question.at,
    countTokens,
    weights: packProfile('default'),
  });
  return packed.map((p) => byId.get(p.record.id)!);
}

/** |aspects covered by the chosen memories| / |aspects of the question|. */
export function coverageOf(question: CoverageQuestion, chosen: readonly CoverageCandidate[]): number {
  const covered = new Set(chosen.flatMap((c) => c.aspects).filter((a) => question.aspects.includes(a)));
  return covered.size / question.aspects.length;
}

export async function coverageExperiment(options: { seed: number; questions: number; budgets: number[] }): Promise<CoverageRow[]> {
  const workload = coverageWorkload(options.seed, options.questions);
  const mean = (values: number[]) => values.reduce((sum, x) => sum + x, 0) / Math.max(1, values.length);
  return options.budgets.map((budget) => {
    const packer = mean(workload.map((q) => coverageOf(q, packForCoverage(q, budget))));
    const topK = mean(workload.map((q) => coverageOf(q, truncateTopK(q, budget))));
    // Both empty is parity; top-k empty against something is an unbounded gain.
    const ratio = topK > 0 ? packer / topK : packer > 0 ? Number.POSITIVE_INFINITY : 1;
    return { budget, packer, topK, ratio };
  });
}
