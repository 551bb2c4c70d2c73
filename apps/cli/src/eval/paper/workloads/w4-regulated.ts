import type { RetentionClass } from '@elma/domain';
import type { Actor, Gold, Lang, Workload, WorkloadGenerator } from '../types';
import { actor, Clock, random, scaled, scaleOf, Script, type Random } from './script';

/**
 * W4, regulated business (paper §7.2): a bank (English) and a clinic
 * (Chinese) with synthetic, clearly fake personal data: names from made-up
 * vocabularies, `555-01xx` and `0755-5550xxxx` phone numbers, account,
 * patient and consent numbers too short to be card or resident-id numbers.
 * Records carry retention classes (`long_term` onboarding and consents,
 * `standard` activity, `session` call notes). Some people are under a legal
 * hold (role `legal`), others are erased (role `dpo`); the two never meet.
 *
 * Gold: after the erasure, probes about an erased person (by an agent, and
 * by compliance looking for their account) list that person's distinctive
 * strings (name, phone, account or patient number, consent number) in
 * `mustNeverAppear`; these strings occur in that person's events only, so a
 * byte scan of the store can look for them too. Held people are still
 * recalled for `legal` (`mustInclude`), and audit-traceability probes ask
 * compliance for a consent and its number (`recall`, id `…-audit`: the
 * contract has no audit category; the harness reads `Recalled.audited`).
 *
 * Size at scale 1: 16 people (8 per tenant), a quarter held, a third
 * erased; scale shrinks people (at least 3 per tenant: one held, one
 * erased, one neither).
 */

const PURPOSES = ['service', 'compliance'];

interface Person {
  id: string;
  lang: Lang;
  tenant: string;
  name: string;
  phone: string;
  number: string;
  consent: string;
  fate: 'held' | 'erased' | 'active';
}

interface Vocabulary {
  tenant: string;
  first: string[];
  last: string[];
  name: (first: string, last: string) => string;
  phone: (n: number) => string;
  number: (n: number) => string;
  consent: (n: number) => string;
  onboarding: (p: Person) => string;
  activities: ((p: Person, r: Random) => string)[];
  consentText: (p: Person, date: string) => string;
  callNote: (p: Person, r: Random) => string;
  questions: {
    phone: (p: Person) => string;
    activity: (p: Person) => string;
    account: (p: Person) => string;
    held: (p: Person) => string;
    consent: (p: Person) => string;
  };
}

const EN: Vocabulary = {
  tenant: 'w4_bank',
  first: ['Alva', 'Bram', 'Cleo', 'Dara', 'Elio', 'Fenna', 'Gus', 'Hedda', 'Ivo', 'Juna', 'Kit', 'Lorna'],
  last: ['Testerson', 'Sampleby', 'Fakeley', 'Mockridge', 'Dummond', 'Placeholt'],
  name: (f, l) => `${f} ${l}`,
  phone: (n) => `555-01${String(n).padStart(2, '0')}`,
  number: (n) => `LB-ACCT-${n}`,
  consent: (n) => `CONS-${n}`,
  onboarding: (p) => `Synthetic test record. ${p.name} opened current account ${p.number} at Larkspur Bank; contact phone ${p.phone}.`,
  activities: [
    (p, r) =>
      `${p.name} applied for a personal loan of ${r.int(3, 25)},000 EUR over ${r.pick([24, 36, 48])} months on account ${p.number}.`,
    (p, r) =>
      `${p.name} disputed a card payment of ${r.int(40, 900)} EUR at ${r.pick(['a furniture shop', 'an airline', 'a hotel'])}; account ${p.number}.`,
    (p, r) => `${p.name} asked to raise the overdraft on account ${p.number} to ${r.pick([500, 1000, 2500])} EUR.`,
    (p, r) => `${p.name} moved ${r.int(2, 40)},000 EUR from account ${p.number} into a fixed-term deposit.`,
  ],
  consentText: (p, d) => `${p.name} consented on ${d} to share account data with the Larkspur credit bureau (consent ${p.consent}).`,
  callNote: (p, r) => `Call with ${p.name}: please call back after ${r.pick(['5 pm', '6 pm', 'noon'])} on ${p.phone}.`,
  questions: {
    phone: (p) => `What is the phone number of ${p.name}?`,
    activity: (p) => `What did ${p.name} ask the bank for recently?`,
    account: (p) => `Show everything we hold about account ${p.number}.`,
    held: (p) => `What records do we hold on ${p.name}?`,
    consent: (p) => `When did ${p.name} consent to data sharing, and under which consent number?`,
  },
};

const ZH: Vocabulary = {
  tenant: 'w4_clinic',
  first: ['思远', '若溪', '嘉木', '听澜', '予安', '知夏', '景行', '书禾', '望舒', '清和', '云起', '南乔'],
  last: ['柏', '岑', '郜', '谷', '蔺', '濮'],
  name: (f, l) => `${l}${f}`,
  phone: (n) => `0755-5550${String(n).padStart(4, '0')}`,
  number: (n) => `AH-PT-${n}`,
  consent: (n) => `同意书-${n}`,
  onboarding: (p) => `合成测试数据。新患者${p.name}在安和诊所建档，病历号${p.number}，联系电话${p.phone}。`,
  activities: [
    (p, r) => {
      const [diagnosis, drug] = r.pick([
        ['季节性过敏性鼻炎', '氯雷他定'],
        ['轻度缺铁性贫血', '铁剂'],
        ['慢性胃炎', '奥美拉唑'],
      ]);
      return `${p.name}（病历号${p.number}）就诊，诊断为${diagnosis}，开具${drug}。`;
    },
    (p, r) => `${p.name}（病历号${p.number}）复诊，${r.pick(['血常规结果正常', '症状明显好转', '需继续服药两周'])}。`,
    (p, r) =>
      `${p.name}（病历号${p.number}）预约了${r.pick(['下周二', '下周四', '月底'])}的${r.pick(['胃镜检查', '过敏原检测', '体检'])}。`,
    (p, r) => `${p.name}（病历号${p.number}）的${r.pick(['医保报销', '检查费用退款', '病历复印'])}申请已受理。`,
  ],
  consentText: (p, d) => `${p.name}于${d}签署电子病历共享知情同意书（编号${p.consent}）。`,
  callNote: (p, r) => `电话回访${p.name}：请在${r.pick(['下午五点', '晚上六点', '中午'])}以后回拨${p.phone}。`,
  questions: {
    phone: (p) => `${p.name}的联系电话是多少？`,
    activity: (p) => `${p.name}最近一次就诊是什么情况？`,
    account: (p) => `调出病历号${p.number}的全部记录。`,
    held: (p) => `我们保存了${p.name}的哪些记录？`,
    consent: (p) => `${p.name}什么时候签的知情同意书？编号是多少？`,
  },
};

export const w4Regulated: WorkloadGenerator = (seed, options): Workload => {
  const scale = scaleOf(options);
  const rng = random(seed);
  const clock = new Clock('2026-01-05');
  const script = new Script();
  const perTenant = scaled(8, scale, 3);
  const people = [...peopleOf(rng, EN, 'en', perTenant), ...peopleOf(rng, ZH, 'zh', perTenant)];
  const retention: Record<RetentionClass, number> = { session: 0, standard: 0, long_term: 0, legal_hold: 0 };
  const holdDay = 30;
  const eraseDay = 45;
  const endDay = 75;
  /** The gold records of each person: onboarding, consent, the first two requests. */
  const gold = new Map<string, { onboarding: string; consent: string; activities: string[] }>();

  for (const p of people) {
    const vocab = p.lang === 'zh' ? ZH : EN;
    const writer = actor({ tenant: p.tenant, sub: 'records-sync', roles: ['service'], purposes: PURPOSES, clearance: 'restricted' });
    let n = 0;
    const write = (day: number, activity: string, text: string, retentionClass: RetentionClass) => {
      retention[retentionClass] += 1;
      const key = `${p.id}-${++n}`;
      script.ingest(
        key,
        writer,
        {
          subject: p.id,
          at: clock.at(day, rng.int(8, 17), rng.int(0, 59)),
          activity,
          text,
          system: p.lang === 'zh' ? 'clinic-his' : 'core-banking',
          channel: 'system',
          sensitivity: 'confidential',
          purposes: PURPOSES,
          retention: retentionClass,
          session: `${p.id}-visit-${n}`,
        },
        p.lang,
      );
      return key;
    };
    const onboarding = write(rng.int(0, 5), 'customer.onboarded', vocab.onboarding(p), 'long_term');
    const consentDate = rng.int(6, 12);
    const consent = write(consentDate, 'consent.given', vocab.consentText(p, clock.date(consentDate)), 'long_term');
    const activities = rng
      .sample(vocab.activities, 2)
      .map((make, i) => write(13 + 10 * i + rng.int(0, 8), 'service.request', make(p, rng), 'standard'));
    write(rng.int(33, 40), 'call.note', vocab.callNote(p, rng), 'session');
    if (p.fate !== 'erased') {
      // Life goes on for everyone not erased, so the probes come after writes that must not resurrect anything.
      write(rng.int(eraseDay + 1, endDay - 5), 'service.request', rng.pick(vocab.activities)(p, rng), 'standard');
    }
    if (p.fate === 'held') script.legalHold(`${p.id}-hold`, clock.at(holdDay, 9), legalOf(p.tenant), p.id);
    if (p.fate === 'erased') script.erase(`${p.id}-erase`, clock.at(eraseDay, 9), dpoOf(p.tenant), p.id);
    gold.set(p.id, { onboarding, consent, activities });
  }
  const ends = new Map(
    [EN, ZH].map((vocab) => {
      const writer = actor({ tenant: vocab.tenant, sub: 'records-sync', roles: ['service'], purposes: PURPOSES });
      const key = script.ingest(
        `${vocab.tenant}-day-end`,
        writer,
        {
          subject: 'operations',
          at: clock.at(endDay, 18),
          activity: 'session.end',
          text: vocab === ZH ? '今日门诊结束，系统已完成日终对账。' : 'End of business day; the ledger was reconciled.',
          system: vocab === ZH ? 'clinic-his' : 'core-banking',
          channel: 'system',
          purposes: PURPOSES,
        },
        vocab === ZH ? 'zh' : 'en',
      );
      return [vocab.tenant, key] as const;
    }),
  );

  for (const p of people) {
    const vocab = p.lang === 'zh' ? ZH : EN;
    const ask = (suffix: string, category: 'erasure' | 'recall', who: Actor, query: string, expected: Gold) =>
      script.probe({
        id: `w4-${p.id}-${suffix}`,
        category,
        lang: p.lang,
        afterKey: ends.get(p.tenant)!,
        actor: who,
        query,
        purpose: who.purposes[0],
        gold: expected,
      });
    const agent = actor({ tenant: p.tenant, sub: 'agent-1', purposes: ['service'], clearance: 'confidential' });
    const compliance = actor({
      tenant: p.tenant,
      sub: 'compliance-1',
      roles: ['compliance'],
      purposes: ['compliance'],
      clearance: 'confidential',
    });
    const legal = legalOf(p.tenant);
    const { onboarding, consent, activities } = gold.get(p.id)!;
    const distinctive = [p.name, p.phone, p.number, p.consent];
    if (p.fate === 'erased') {
      ask('erased-phone', 'erasure', agent, vocab.questions.phone(p), { mustNeverAppear: distinctive });
      ask('erased-activity', 'erasure', agent, vocab.questions.activity(p), { mustNeverAppear: distinctive });
      ask('erased-account', 'erasure', compliance, vocab.questions.account(p), { mustNeverAppear: distinctive });
    } else if (p.fate === 'held') {
      ask('held', 'recall', legal, vocab.questions.held(p), { mustInclude: [onboarding, ...activities] });
    } else {
      ask('activity', 'recall', agent, vocab.questions.activity(p), { mustInclude: [activities[0]] });
      ask('audit', 'recall', compliance, vocab.questions.consent(p), { mustInclude: [consent] });
    }
  }
  return script.build('W4', 'Regulated business', seed, {
    people: people.length,
    held: people.filter((p) => p.fate === 'held').length,
    erased: people.filter((p) => p.fate === 'erased').length,
    erasedStrings: people.filter((p) => p.fate === 'erased').length * 4,
    'retention.long_term': retention.long_term,
    'retention.standard': retention.standard,
    'retention.session': retention.session,
  });
};

const legalOf = (tenant: string) => actor({ tenant, sub: 'legal-1', roles: ['legal'], purposes: ['compliance'], clearance: 'restricted' });
const dpoOf = (tenant: string) => actor({ tenant, sub: 'dpo-1', roles: ['dpo'], purposes: ['compliance'], clearance: 'restricted' });

/** `count` people of one tenant with unique names and numbers; at least one held and one erased. */
function peopleOf(rng: Random, vocab: Vocabulary, lang: Lang, count: number): Person[] {
  const names = rng.sample(
    vocab.first.flatMap((f) => vocab.last.map((l) => vocab.name(f, l))),
    count,
  );
  // Distinct numbers of fixed width: none is a prefix of another, so a string found names one person.
  const numbers = rng.sample(
    Array.from({ length: 900 }, (_, i) => 100_000 + i * 997),
    2 * count,
  );
  const phones = rng.sample(
    Array.from({ length: lang === 'zh' ? 10_000 : 100 }, (_, i) => i),
    count,
  );
  const held = Math.max(1, Math.round(count / 4));
  const erased = Math.max(1, Math.round(count / 3));
  const fates = rng.shuffle(
    Array.from({ length: count }, (_, i) => (i < held ? 'held' : i < held + erased ? 'erased' : 'active') as Person['fate']),
  );
  return names.map((name, i) => ({
    id: `${lang === 'zh' ? 'pat' : 'cust'}-${String(i + 1).padStart(4, '0')}`,
    lang,
    tenant: vocab.tenant,
    name,
    phone: vocab.phone(phones[i]),
    number: vocab.number(numbers[2 * i]),
    consent: vocab.consent(numbers[2 * i + 1]),
    fate: fates[i],
  }));
}
