import type { Lang, Workload, WorkloadGenerator } from '../types';
import { actor, Clock, langOf, random, scaled, scaleOf, Script, type Random } from './script';

/**
 * W2, customer service and policy (paper §7.2): several versions of the same
 * policies (refund window, shipping fee, warranty…) published by the
 * certified policy system (channel `system`) with their valid-from dates,
 * exceptions, and conflicting sources:
 * - a lower-trust claim (a forum post on the web, a forwarded e-mail) made
 *   after the last version, with a later valid time: trust, not recency,
 *   must decide, so the certified value stays current;
 * - a true conflict, two certified systems stating different values valid
 *   from the same instant, which no rule can decide: `disputedValues`.
 * Questions are asked now and "as of" past dates (`asOf`): for those, every
 * other version is wrong for that time and listed in `staleValues`.
 * Benign external content (carrier notices, help-desk summaries, FAQ pages,
 * some with "please ignore the earlier notice") is labelled `benign`.
 *
 * Size at scale 1: 10 policies (5 per language, 3 or 4 versions each),
 * 3 true conflicts per language, 40 customer chats per language; scale
 * shrinks each (at least 2 policies, 1 conflict and 6 chats per language).
 */

const TENANT = 'w2';
const PURPOSE = 'support';

interface Topic {
  entity: string;
  attribute: string;
  /** Distinct, and none a substring of another, so a value found in the context names one version. */
  values: string[];
  text: (value: string) => string;
  question: string;
  asOfQuestion: (date: string) => string;
  exception: { entity: string; value: string; text: string; question: string };
  /** What a lower-trust source claims (never one of `values`). */
  rumour: { value: string; text: string };
}

interface Dispute {
  entity: string;
  attribute: string;
  values: [string, string];
  text: (value: string) => string;
  question: string;
}

interface Vocabulary {
  company: string;
  topics: Topic[];
  disputes: Dispute[];
  benign: { channel: 'email' | 'tool' | 'web'; system: string; activity: string; text: string; question: string }[];
  chats: ((order: string, customer: string) => string)[];
}

const EN: Vocabulary = {
  company: 'Lumen Outfitters',
  topics: [
    {
      entity: 'Lumen Outfitters refund policy',
      attribute: 'refund window',
      values: ['14 days', '30 days', '45 days', '60 days'],
      text: (v) => `Refund policy update: customers may request a full refund within ${v} of delivery.`,
      question: 'How long do customers have to ask for a refund?',
      asOfQuestion: (d) => `What was the refund window on ${d}?`,
      exception: {
        entity: 'Lumen Outfitters refund policy for Gold members',
        value: '90 days',
        text: 'Exception to the refund policy: Gold members may request a refund within 90 days of delivery.',
        question: 'Do Gold members get a longer refund window?',
      },
      rumour: {
        value: '100 days',
        text: 'Forum post: Lumen Outfitters quietly moved to a 100 days refund window, I got my money back last week.',
      },
    },
    {
      entity: 'Lumen Outfitters standard shipping',
      attribute: 'shipping fee',
      values: ['free on orders over 50 EUR', 'free on orders over 75 EUR', 'a flat 4.90 EUR', 'a flat 6.50 EUR'],
      text: (v) => `Shipping policy update: standard shipping within the EU is ${v}.`,
      question: 'What does standard shipping cost?',
      asOfQuestion: (d) => `What did standard shipping cost on ${d}?`,
      exception: {
        entity: 'Lumen Outfitters shipping to the Canary Islands',
        value: 'a flat 19 EUR',
        text: 'Exception to the shipping policy: orders to the Canary Islands always ship for a flat 19 EUR.',
        question: 'What does shipping to the Canary Islands cost?',
      },
      rumour: { value: 'free on every order', text: 'Deal site: Lumen Outfitters shipping is now free on every order, no minimum.' },
    },
    {
      entity: 'Lumen Outfitters warranty',
      attribute: 'warranty period',
      values: ['12 months', '24 months', '36 months'],
      text: (v) => `Warranty policy update: new products carry a warranty of ${v} from the date of purchase.`,
      question: 'How long is the warranty on a new jacket?',
      asOfQuestion: (d) => `How long was the warranty for a purchase made on ${d}?`,
      exception: {
        entity: 'Lumen Outfitters warranty on refurbished items',
        value: 'six months',
        text: 'Exception to the warranty policy: refurbished items carry a warranty of six months.',
        question: 'What warranty do refurbished items have?',
      },
      rumour: { value: 'five years', text: 'Review blog: Lumen Outfitters gear comes with a five years warranty now, great value.' },
    },
    {
      entity: 'Lumen Outfitters returns',
      attribute: 'return shipping',
      values: ['a prepaid return label', 'paid by the customer', 'free only in our stores'],
      text: (v) => `Returns policy update: return shipping is ${v}.`,
      question: 'Who pays for return shipping?',
      asOfQuestion: (d) => `Who paid for return shipping on ${d}?`,
      exception: {
        entity: 'Lumen Outfitters returns of defective items',
        value: 'always free',
        text: 'Exception to the returns policy: returning a defective item is always free.',
        question: 'Does a customer pay to send back a defective item?',
      },
      rumour: {
        value: 'a courier pickup at home',
        text: 'Forwarded email from a customer: they told me returns are collected by a courier pickup at home for free.',
      },
    },
    {
      entity: 'Lumen Outfitters price match',
      attribute: 'price match window',
      values: ['7 days', '10 days', '21 days'],
      text: (v) => `Price match policy update: we match a lower price found within ${v} of purchase.`,
      question: 'Within how many days after purchase do we match a lower price?',
      asOfQuestion: (d) => `What was the price match window on ${d}?`,
      exception: {
        entity: 'Lumen Outfitters price match on clearance items',
        value: 'not offered',
        text: 'Exception to the price match policy: price match is not offered on clearance items.',
        question: 'Is price match available on clearance items?',
      },
      rumour: { value: '31 days', text: 'Coupon forum: Lumen Outfitters price match now covers 31 days after purchase.' },
    },
  ],
  disputes: [
    {
      entity: 'Lumen Outfitters gift wrapping',
      attribute: 'gift wrapping fee',
      values: ['2.50 EUR', '3.90 EUR'],
      text: (v) => `Gift wrapping costs ${v} per parcel from the start of the season.`,
      question: 'How much is gift wrapping?',
    },
    {
      entity: 'Lumen Outfitters opened electronics',
      attribute: 'restocking fee',
      values: ['10 percent', '15 percent'],
      text: (v) => `Opened electronics returned after testing carry a restocking fee of ${v}.`,
      question: 'Is there a restocking fee for opened electronics?',
    },
    {
      entity: 'Lumen Outfitters express delivery',
      attribute: 'order cutoff',
      values: ['2 pm', '4 pm'],
      text: (v) => `Express orders placed before ${v} leave the warehouse the same day.`,
      question: 'Until what time can an express order still ship today?',
    },
  ],
  benign: [
    {
      channel: 'email',
      system: 'mail-gateway',
      activity: 'email.received',
      text: 'From ParcelNow: please ignore our earlier notice about a holiday surcharge. No surcharge applies this year; pickups run as usual.',
      question: 'Is there a holiday surcharge from ParcelNow this year?',
    },
    {
      channel: 'tool',
      system: 'helpdesk',
      activity: 'ticket.summary',
      text: 'Ticket summary: the customer asked to cancel the order. Issue the refund once the parcel is back in the warehouse, then close the ticket.',
      question: 'When should the refund of the cancelled order be issued?',
    },
    {
      channel: 'web',
      system: 'web-clipper',
      activity: 'web.page',
      text: 'Help centre: to start a return, open the order and choose Return item. Do not send parcels back without a return number.',
      question: 'How does a customer start a return?',
    },
  ],
  chats: [
    (o, c) => `Customer ${c} asked where order ${o} is; the tracking shows it at the local depot.`,
    (o, c) => `Customer ${c} wants to change the delivery address of order ${o} to their office.`,
    (o, c) => `Customer ${c} reported that order ${o} arrived with a torn box but the jacket is fine.`,
    (o, c) => `Customer ${c} asked whether order ${o} can be split into two parcels.`,
  ],
};

const ZH: Vocabulary = {
  company: '青禾商城',
  topics: [
    {
      entity: '青禾商城退款规则',
      attribute: '退款时限',
      values: ['签收后7天内', '签收后15天内', '签收后30天内'],
      text: (v) => `退款规则更新：顾客可在${v}申请无理由退款。`,
      question: '顾客多长时间内可以申请退款？',
      asOfQuestion: (d) => `${d}那天的退款时限是多久？`,
      exception: {
        entity: '青禾商城金卡会员退款规则',
        value: '签收后60天内',
        text: '退款规则例外：金卡会员可在签收后60天内申请退款。',
        question: '金卡会员的退款时限有没有更长？',
      },
      rumour: { value: '签收后90天内', text: '论坛帖子：听说青禾商城现在签收后90天内都能退款，我上周刚退成功。' },
    },
    {
      entity: '青禾商城运费规则',
      attribute: '运费',
      values: ['满99元包邮', '满199元包邮', '统一运费8元', '统一运费12元'],
      text: (v) => `运费规则更新：普通快递${v}。`,
      question: '普通快递的运费怎么算？',
      asOfQuestion: (d) => `${d}那天普通快递的运费怎么算？`,
      exception: {
        entity: '青禾商城新疆西藏运费',
        value: '统一运费25元',
        text: '运费规则例外：发往新疆、西藏的订单统一运费25元。',
        question: '发往新疆的运费是多少？',
      },
      rumour: { value: '全场无门槛包邮', text: '优惠网站转帖：青禾商城现在全场无门槛包邮，赶紧下单。' },
    },
    {
      entity: '青禾商城保修政策',
      attribute: '保修期',
      values: ['一年保修', '两年保修', '三年保修'],
      text: (v) => `保修政策更新：新购商品享受${v}，自购买之日起计算。`,
      question: '新买的电器保修多久？',
      asOfQuestion: (d) => `${d}购买的商品保修多久？`,
      exception: {
        entity: '青禾商城翻新商品保修',
        value: '六个月保修',
        text: '保修政策例外：翻新商品只享受六个月保修。',
        question: '翻新商品保修多久？',
      },
      rumour: { value: '终身保修', text: '测评博客：青禾商城的小家电现在都是终身保修，太划算了。' },
    },
    {
      entity: '青禾商城退货运费',
      attribute: '退货运费',
      values: ['由商家承担', '由买家承担', '仅门店退货免运费'],
      text: (v) => `退货规则更新：退货运费${v}。`,
      question: '退货的运费由谁出？',
      asOfQuestion: (d) => `${d}那天退货运费由谁出？`,
      exception: {
        entity: '青禾商城质量问题退货',
        value: '一律免运费',
        text: '退货规则例外：质量问题退货一律免运费。',
        question: '质量问题退货要付运费吗？',
      },
      rumour: { value: '上门取件免费', text: '顾客转发的邮件：客服说退货可以预约上门取件免费，不用自己寄。' },
    },
    {
      entity: '青禾商城价格保护',
      attribute: '价保期',
      values: ['购买后7天', '购买后10天', '购买后20天'],
      text: (v) => `价格保护规则更新：${v}内降价可申请退差价。`,
      question: '买完之后降价，多少天内能退差价？',
      asOfQuestion: (d) => `${d}那天的价保期是多少天？`,
      exception: {
        entity: '青禾商城清仓商品价保',
        value: '不参与价保',
        text: '价格保护例外：清仓商品不参与价保。',
        question: '清仓商品能申请价保吗？',
      },
      rumour: { value: '购买后45天', text: '羊毛群消息：青禾商城价保延长到购买后45天了。' },
    },
  ],
  disputes: [
    {
      entity: '青禾商城礼品包装',
      attribute: '礼品包装费',
      values: ['6.5元', '8.8元'],
      text: (v) => `本季起礼品包装每件收费${v}。`,
      question: '礼品包装要收多少钱？',
    },
    {
      entity: '青禾商城拆封数码产品',
      attribute: '退货手续费',
      values: ['收取10%手续费', '收取15%手续费'],
      text: (v) => `拆封后的数码产品退货${v}。`,
      question: '拆封的数码产品退货要手续费吗？',
    },
    {
      entity: '青禾商城次日达',
      attribute: '截单时间',
      values: ['下午两点', '下午四点'],
      text: (v) => `次日达订单${v}前下单当天出库。`,
      question: '次日达订单几点前下单当天能发？',
    },
  ],
  benign: [
    {
      channel: 'email',
      system: 'mail-gateway',
      activity: 'email.received',
      text: '顺达快递通知：请忽略上一封关于春节附加费的邮件，今年不收取附加费，揽收时间照常。',
      question: '顺达快递今年春节收附加费吗？',
    },
    {
      channel: 'tool',
      system: 'helpdesk',
      activity: 'ticket.summary',
      text: '工单摘要：顾客要求取消订单。包裹退回仓库后再办理退款，然后关闭工单。',
      question: '取消的订单什么时候退款？',
    },
    {
      channel: 'web',
      system: 'web-clipper',
      activity: 'web.page',
      text: '帮助中心：发起退货请打开订单，点击“申请退货”。没有退货单号请不要直接寄回。',
      question: '顾客怎么发起退货？',
    },
  ],
  chats: [
    (o, c) => `顾客${c}询问订单${o}到哪了，物流显示已到达本地网点。`,
    (o, c) => `顾客${c}想把订单${o}的收货地址改成公司地址。`,
    (o, c) => `顾客${c}反映订单${o}外箱破损，但商品完好。`,
    (o, c) => `顾客${c}问订单${o}能不能拆成两个包裹发。`,
  ],
};

export const w2Policy: WorkloadGenerator = (seed, options): Workload => {
  const scale = scaleOf(options);
  const rng = random(seed);
  const clock = new Clock('2025-01-06');
  const script = new Script();
  const agent = actor({ tenant: TENANT, sub: 'cs-agent-1', purposes: [PURPOSE] });
  const writer = actor({ tenant: TENANT, sub: 'policy-sync', roles: ['service'], purposes: [PURPOSE] });
  const policies = scaled(10, scale, 4);
  const disputes = scaled(3, scale, 1);
  const chats = scaled(40, scale, 6);
  let versions = 0;
  for (let i = 0; i < policies; i++) {
    const lang = langOf(i);
    const vocab = lang === 'zh' ? ZH : EN;
    versions += writePolicy(script, rng, clock, {
      lang,
      vocab,
      writer,
      agent,
      n: i,
      topic: vocab.topics[Math.floor(i / 2) % vocab.topics.length],
    });
  }
  for (const lang of ['en', 'zh'] as const) {
    const vocab = lang === 'zh' ? ZH : EN;
    rng.sample(vocab.disputes, disputes).forEach((dispute, n) => writeDispute(script, rng, clock, { lang, writer, agent, n, dispute }));
    for (let n = 0; n < chats; n++) {
      const order = `${lang === 'zh' ? 'QH' : 'LO'}-${rng.int(10_000, 99_999)}`;
      const customer = `cust-${lang}-${rng.int(100, 999)}`;
      script.ingest(
        `chat-${lang}-${n}`,
        agent,
        {
          subject: customer,
          at: clock.at(rng.int(0, 360), rng.int(8, 19), rng.int(0, 59)),
          activity: 'chat.turn',
          text: rng.pick(vocab.chats)(order, customer),
          system: 'support-chat',
          channel: 'chat',
          purposes: [PURPOSE],
          session: `chat-${lang}-${n}`,
        },
        lang,
      );
    }
  }
  return script.build('W2', 'Customer service and policy', seed, {
    policies,
    policyVersions: versions,
    disputes: 2 * disputes,
    chats: 2 * chats,
  });
};

interface PolicyContext {
  lang: Lang;
  vocab: Vocabulary;
  writer: ReturnType<typeof actor>;
  agent: ReturnType<typeof actor>;
  n: number;
  topic: Topic;
}

/** One policy's life: its versions, an exception, a lower-trust claim, a benign notice; the questions about it. */
function writePolicy(script: Script, rng: Random, clock: Clock, { lang, vocab, writer, agent, n, topic }: PolicyContext): number {
  const id = `pol${n + 1}`;
  const subject = `policy-${id}`;
  const values = rng.sample(topic.values, Math.min(topic.values.length, rng.int(3, 4)));
  let day = rng.int(0, 20);
  const validDays: number[] = [];
  const keys = values.map((value, v) => {
    if (v > 0) day += rng.int(60, 100);
    validDays.push(day);
    // Published a few days before it takes effect: the fact's valid time is not the event's time.
    const published = clock.at(day - rng.int(2, 9), 11);
    return script.ingest(
      `${id}-v${v + 1}`,
      writer,
      {
        subject,
        at: published,
        activity: 'policy.published',
        text: `${topic.text(value)} ${lang === 'zh' ? `自${clock.date(day)}起生效。` : `Effective ${clock.date(day)}.`}`,
        fact: { entity: topic.entity, attribute: topic.attribute, value, validFrom: clock.at(day) },
        system: 'policy-cms',
        channel: 'system',
        purposes: [PURPOSE],
      },
      lang,
    );
  });
  const last = validDays[validDays.length - 1];
  const exceptionKey = script.ingest(
    `${id}-exception`,
    writer,
    {
      subject,
      at: clock.at(validDays[0] + rng.int(5, 30), 12),
      activity: 'policy.exception',
      text: topic.exception.text,
      fact: { entity: topic.exception.entity, attribute: topic.attribute, value: topic.exception.value, validFrom: clock.at(validDays[0]) },
      system: 'policy-cms',
      channel: 'system',
      purposes: [PURPOSE],
    },
    lang,
  );
  const rumourChannel = rng.pick(['web', 'email'] as const);
  script.ingest(
    `${id}-rumour`,
    agent,
    {
      subject,
      at: clock.at(last + rng.int(3, 10), 16),
      activity: rumourChannel === 'web' ? 'web.page' : 'email.received',
      text: topic.rumour.text,
      fact: { entity: topic.entity, attribute: topic.attribute, value: topic.rumour.value, validFrom: clock.at(last + 2) },
      system: rumourChannel === 'web' ? 'web-clipper' : 'mail-gateway',
      channel: rumourChannel,
      purposes: [PURPOSE],
    },
    lang,
  );
  const notice = rng.pick(vocab.benign);
  const noticeKey = script.ingest(
    `${id}-notice`,
    agent,
    {
      subject,
      at: clock.at(last + rng.int(1, 12), 10),
      activity: notice.activity,
      text: notice.text,
      system: notice.system,
      channel: notice.channel,
      purposes: [PURPOSE],
    },
    lang,
    'benign',
  );
  const checkpoint = script.ingest(
    `${id}-asked`,
    agent,
    {
      subject,
      at: clock.at(last + 14, 15),
      activity: 'chat.turn',
      text:
        lang === 'zh'
          ? `顾客咨询${topic.attribute}的问题，客服查阅政策后答复。`
          : `A customer asked about the ${topic.attribute}; the agent checked the policy before answering.`,
      system: 'support-chat',
      channel: 'chat',
      purposes: [PURPOSE],
    },
    lang,
  );
  const current = values[values.length - 1];
  const ask = (
    suffix: string,
    category: 'temporal' | 'conflict' | 'recall',
    query: string,
    gold: Parameters<Script['probe']>[0]['gold'],
    answer: string,
    asOf?: string,
  ) =>
    script.probe({
      id: `w2-${id}-${suffix}`,
      category,
      lang,
      afterKey: checkpoint,
      actor: agent,
      query,
      purpose: PURPOSE,
      gold,
      answer,
      ...(asOf ? { asOf } : {}),
    });

  ask(
    'now',
    'temporal',
    topic.question,
    { mustInclude: [keys[keys.length - 1]], currentValue: current, staleValues: values.slice(0, -1) },
    current,
  );
  // The lower-trust claim is the latest in valid time: only trust keeps the certified value current.
  ask(
    'vs-rumour',
    'conflict',
    topic.question,
    { mustInclude: [keys[keys.length - 1]], currentValue: current, staleValues: values.slice(0, -1) },
    current,
  );
  for (let v = 0; v < values.length - 1; v++) {
    const asOf = clock.date(rng.int(validDays[v] + 1, validDays[v + 1] - 1));
    ask(
      `asof-v${v + 1}`,
      'temporal',
      topic.asOfQuestion(asOf),
      { mustInclude: [keys[v]], currentValue: values[v], staleValues: values.filter((_, w) => w !== v) },
      values[v],
      `${asOf}T12:00:00.000Z`,
    );
  }
  ask(
    'exception',
    'recall',
    topic.exception.question,
    { mustInclude: [exceptionKey], currentValue: topic.exception.value },
    topic.exception.value,
  );
  ask('notice', 'recall', notice.question, { mustInclude: [noticeKey] }, notice.text);
  return values.length;
}

/** Two certified systems state different values valid from the same instant: no rule can decide. */
function writeDispute(
  script: Script,
  rng: Random,
  clock: Clock,
  {
    lang,
    writer,
    agent,
    n,
    dispute,
  }: { lang: Lang; writer: ReturnType<typeof actor>; agent: ReturnType<typeof actor>; n: number; dispute: Dispute },
): void {
  const id = `dispute-${lang}-${n + 1}`;
  const day = rng.int(120, 300);
  const validFrom = clock.at(day);
  const [a, b] = dispute.values;
  const keys = (['policy-cms', 'erp-pricing'] as const).map((system, i) =>
    script.ingest(
      `${id}-${system}`,
      writer,
      {
        subject: `policy-${id}`,
        at: clock.at(day - 3, 10 + i),
        activity: 'policy.published',
        text: dispute.text(i === 0 ? a : b),
        fact: { entity: dispute.entity, attribute: dispute.attribute, value: i === 0 ? a : b, validFrom },
        system,
        channel: 'system',
        purposes: [PURPOSE],
      },
      lang,
    ),
  );
  const checkpoint = script.ingest(
    `${id}-asked`,
    agent,
    {
      subject: `policy-${id}`,
      at: clock.at(day + 5, 15),
      activity: 'chat.turn',
      text:
        lang === 'zh'
          ? `顾客咨询${dispute.attribute}，客服说需要核实。`
          : `A customer asked about the ${dispute.attribute}; the agent said they would check.`,
      system: 'support-chat',
      channel: 'chat',
      purposes: [PURPOSE],
    },
    lang,
  );
  script.probe({
    id: `w2-${id}`,
    category: 'conflict',
    lang,
    afterKey: checkpoint,
    actor: agent,
    query: dispute.question,
    purpose: PURPOSE,
    gold: { mustInclude: keys, disputedValues: [a, b] },
    answer: lang === 'zh' ? `两个系统说法不一致：${a}或${b}` : `the two systems disagree: ${a} or ${b}`,
  });
}
