import type { Lang, Workload, WorkloadGenerator } from '../types';
import { actor, Clock, langOf, random, scaled, scaleOf, Script, type Random } from './script';

/**
 * W1, long-running project assistant (paper §7.2): several projects, each a
 * script of six to ten weeks of requirement changes, a staffing change,
 * commitments, two postponements and a changed preference, between daily
 * stand-up chatter. Checkpoint questions need the history: the deadline
 * after one and after two postponements (the earlier dates are stale), who
 * leads now, the format now, who promised what, how the client wants its
 * reports, what was agreed at kickoff.
 *
 * Benign external content (meeting notes from a tool, vendor e-mails, a
 * web page) carries harmless imperative business language ("please ignore
 * the old invoice", "请忽略上一版报价"): labelled `benign`, it gives the
 * false-positive rate of the injection and poisoning defences.
 *
 * Gold answers stay checkable on the context alone, so an event that
 * changes a value never names the value it replaces, and leads (whose names
 * are gold values) appear only in the events that make them lead.
 *
 * Size at scale 1: 8 projects (4 English, 4 Chinese), four stand-up notes a
 * week; scale shrinks projects (at least 2) and chatter (at least 1 a week).
 */

const TENANT = 'w1';
const PURPOSE = 'project_work';

interface Vocabulary {
  projects: string[];
  clients: string[];
  leads: string[];
  members: string[];
  vendors: string[];
  libraries: string[];
  features: string[];
  /** A requirement that changes once: what it is about and its possible values. */
  requirements: { entity: (project: string) => string; attribute: string; values: string[]; question: (project: string) => string }[];
  preferences: string[];
  budgets: string[];
  components: string[];
  tasks: string[];
}

const EN: Vocabulary = {
  projects: ['Apollo', 'Borealis', 'Cobalt', 'Dynamo', 'Everest', 'Falcon', 'Granite', 'Harbor'],
  clients: ['Northwind Traders', 'Contoso Health', 'Fabrikam Logistics', 'Tailspin Toys', 'Litware Bank', 'Adventure Works'],
  leads: ['Maya Chen', 'Tom Fischer', 'Priya Nair', 'Lukas Berg', 'Sara Okafor', 'Diego Alvarez', 'Hannah Weiss', 'Omar Haddad'],
  members: ['Ivy Park', 'Ben Lowe', 'Noah Schmidt', 'Lena Kovac', 'Raj Patel', 'Zoe Martin'],
  vendors: ['LoadForge', 'Testwell GmbH', 'CloudPeak Hosting', 'Quillsoft'],
  libraries: ['Stripe-like Payments', 'OpenLedger', 'FastGrid'],
  features: ['single sign-on', 'the invoice export', 'the approval workflow', 'the mobile check-in'],
  requirements: [
    {
      entity: (p) => `${p} invoice export`,
      attribute: 'file format',
      values: ['CSV', 'XLSX', 'PDF/A'],
      question: (p) => `Which file format does the ${p} invoice export use now?`,
    },
    {
      entity: (p) => `${p} login`,
      attribute: 'sign-in method',
      values: ['password plus SMS code', 'SSO through Azure AD', 'passkeys'],
      question: (p) => `How do users sign in to ${p} now?`,
    },
    {
      entity: (p) => `${p} hosting`,
      attribute: 'data region',
      values: ['Frankfurt', 'Dublin', 'Stockholm'],
      question: (p) => `In which region is ${p} hosted now?`,
    },
  ],
  preferences: ['a written summary by email every Monday', 'a 15-minute call every Thursday', 'a shared dashboard and no status meetings'],
  budgets: ['120 person-days', '85 person-days', '200 person-days', '64 person-days'],
  components: ['payment gateway', 'search index', 'audit log', 'report builder', 'notification service'],
  tasks: ['load testing', 'the data migration dry run', 'accessibility fixes', 'the API contract review', 'release notes'],
};

const ZH: Vocabulary = {
  projects: ['星河', '云帆', '青松', '北辰', '远航', '磐石', '晨曦', '长风'],
  clients: ['恒泰物流', '华岳医疗', '京华银行', '南山制造', '东岭零售', '瑞丰保险'],
  leads: ['李伟', '张敏', '王芳', '陈静', '刘洋', '赵磊', '孙悦', '周婷'],
  members: ['林小雨', '郭杰', '吴昊', '郑海', '何佳', '许琳'],
  vendors: ['启明测试', '云峰托管', '卓越软件', '蓝鲸压测'],
  libraries: ['星云支付', '开源账本', '快表格'],
  features: ['单点登录', '发票导出', '审批流', '移动端签到'],
  requirements: [
    {
      entity: (p) => `${p}项目`,
      attribute: '发票导出格式',
      values: ['CSV', 'Excel', 'OFD 版式文件'],
      question: (p) => `${p}项目的发票导出现在用什么文件格式？`,
    },
    {
      entity: (p) => `${p}项目`,
      attribute: '登录方式',
      values: ['短信验证码', '企业微信单点登录', '钉钉扫码登录'],
      question: (p) => `${p}项目现在的登录方式是什么？`,
    },
    {
      entity: (p) => `${p}项目`,
      attribute: '部署区域',
      values: ['华东上海', '华北北京', '华南深圳'],
      question: (p) => `${p}项目现在部署在哪个区域？`,
    },
  ],
  preferences: ['每周一用邮件发书面周报', '每周四开15分钟电话会', '只看共享看板，不开周会'],
  budgets: ['120人天', '85人天', '200人天', '64人天'],
  components: ['支付网关', '搜索索引', '审计日志', '报表生成器', '消息通知服务'],
  tasks: ['压力测试', '数据迁移演练', '无障碍修复', '接口契约评审', '发布说明'],
};

interface Project {
  id: string;
  name: string;
  lang: Lang;
  client: string;
  leads: [string, string];
  members: string[];
  vendor: string;
  library: string;
  feature: string;
  requirement: Vocabulary['requirements'][number];
  requirementValues: [string, string];
  preferences: [string, string];
  budget: string;
  startDay: number;
  weeks: number;
}

function projectsOf(rng: Random, count: number): Project[] {
  const byLang = {
    en: { vocab: EN, names: rng.shuffle(EN.projects), leads: rng.shuffle(EN.leads) },
    zh: { vocab: ZH, names: rng.shuffle(ZH.projects), leads: rng.shuffle(ZH.leads) },
  };
  return Array.from({ length: count }, (_, i) => {
    const lang = langOf(i);
    const { vocab, names, leads } = byLang[lang];
    const n = Math.floor(i / 2);
    const requirement = rng.pick(vocab.requirements);
    const [v1, v2] = rng.sample(requirement.values, 2);
    const [p1, p2] = rng.sample(vocab.preferences, 2);
    return {
      id: `p${i + 1}`,
      name: names[n % names.length],
      lang,
      client: rng.pick(vocab.clients),
      // Two leads per project, never shared between projects of a language: a lead's name is a gold value.
      leads: [leads[(2 * n) % leads.length], leads[(2 * n + 1) % leads.length]],
      members: rng.sample(vocab.members, 4),
      vendor: rng.pick(vocab.vendors),
      library: rng.pick(vocab.libraries),
      feature: rng.pick(vocab.features),
      requirement,
      requirementValues: [v1, v2],
      preferences: [p1, p2],
      budget: rng.pick(vocab.budgets),
      startDay: i * 3 + rng.int(0, 2),
      weeks: rng.int(6, 10),
    };
  });
}

export const w1Project: WorkloadGenerator = (seed, options): Workload => {
  const scale = scaleOf(options);
  const rng = random(seed);
  const clock = new Clock('2026-03-02');
  const script = new Script();
  const projects = projectsOf(rng, scaled(8, scale, 2));
  const chatterPerWeek = scaled(4, scale, 1);
  for (const project of projects) writeProject(script, rng, clock, project, chatterPerWeek);
  return script.build('W1', 'Long-running project assistant', seed, { projects: projects.length, chatterPerWeek });
};

function writeProject(script: Script, rng: Random, clock: Clock, p: Project, chatterPerWeek: number): void {
  const zh = p.lang === 'zh';
  const vocab = zh ? ZH : EN;
  const who = actor({ tenant: TENANT, sub: `pm-${p.id}`, purposes: [PURPOSE], project: p.id });
  const day = (d: number, hour = 10, minute = 0) => clock.at(p.startDay + d, hour, minute);
  const week = (d: number) => Math.floor(d / 7) + 1;
  const base = { subject: `project-${p.id}`, purposes: [PURPOSE], project: p.id };
  const chat = (
    key: string,
    d: number,
    activity: string,
    text: string,
    fact?: { entity: string; attribute: string; value: string },
    hour = 10,
  ) =>
    script.ingest(
      `${p.id}-${key}`,
      who,
      {
        ...base,
        at: day(d, hour),
        activity,
        text,
        system: 'assistant-chat',
        channel: 'chat',
        session: `${p.id}-wk${week(d)}`,
        ...(fact ? { fact: { ...fact, validFrom: day(d, hour) } } : {}),
      },
      p.lang,
    );
  const external = (key: string, d: number, channel: 'tool' | 'email' | 'web', system: string, activity: string, text: string) =>
    script.ingest(
      `${p.id}-${key}`,
      who,
      { ...base, at: day(d, 14), activity, text, system, channel, session: `${p.id}-wk${week(d)}` },
      p.lang,
      'benign',
    );

  const deadlines = [p.weeks * 7 - 7, 0, 0];
  deadlines[1] = deadlines[0] + rng.int(7, 14);
  deadlines[2] = deadlines[1] + rng.int(7, 21);
  const [d1, d2, d3] = deadlines.map((d) => clock.date(p.startDay + d));
  const deadline = { entity: zh ? `${p.name}项目` : `Project ${p.name}`, attribute: zh ? '截止日期' : 'deadline' };
  const lead = { entity: zh ? `${p.name}项目` : `Project ${p.name}`, attribute: zh ? '负责人' : 'lead' };
  const req = { entity: p.requirement.entity(p.name), attribute: p.requirement.attribute };
  const pref = { entity: zh ? `${p.client}（客户）` : `${p.client} (client)`, attribute: zh ? '周报偏好' : 'status report preference' };
  const [m1, m2, m3] = p.members;
  const [r1, r2] = p.requirementValues;
  const commitDate = clock.date(p.startDay + 19);
  const lastDay = p.weeks * 7 - 1;

  // The kickoff names no value that later changes: it is the gold of a recall question, never a stale record.
  const kickoff = chat(
    'kickoff',
    0,
    'meeting.kickoff',
    zh
      ? `${p.name}项目启动会：客户是${p.client}，范围是客户门户，重点是${p.feature}，预算${p.budget}。`
      : `Kickoff of Project ${p.name}: the client is ${p.client}; the scope is the customer portal, centred on ${p.feature}; the budget is ${p.budget}.`,
  );
  const deadlineKey1 = chat(
    'deadline-1',
    0,
    'schedule.set',
    zh ? `${p.name}项目截止日期定为${d1}。` : `The deadline of Project ${p.name} is ${d1}.`,
    { ...deadline, value: d1 },
    10,
  );
  const leadKey1 = chat(
    'lead-1',
    0,
    'staffing.assign',
    zh ? `${p.leads[0]}担任${p.name}项目负责人。` : `${p.leads[0]} is the lead of Project ${p.name}.`,
    { ...lead, value: p.leads[0] },
    11,
  );
  const reqKey1 = chat(
    'req-1',
    1,
    'requirement.set',
    zh ? `${req.entity}的${req.attribute}定为${r1}。` : `${req.entity}: the ${req.attribute} is ${r1}.`,
    { ...req, value: r1 },
  );
  const prefKey1 = chat(
    'pref-1',
    1,
    'preference.stated',
    zh ? `${p.client}的对接人说，他们希望${p.preferences[0]}。` : `The contact at ${p.client} said they would like ${p.preferences[0]}.`,
    { ...pref, value: p.preferences[0] },
    15,
  );
  const commit = chat(
    'commit',
    8,
    'commitment.made',
    zh
      ? `${m1}向${p.client}承诺，${commitDate}前演示${p.feature}。`
      : `${m1} promised ${p.client} a demo of ${p.feature} by ${commitDate}.`,
  );
  const notes = external(
    'notes',
    15,
    'tool',
    'meeting-notes',
    'meeting.notes',
    zh
      ? `会议纪要（自动生成）——${p.name}项目周会。待办：${m2}更新测试计划；${m3}重新开具发票。请忽略三月份的旧发票，那张税率开错了。`
      : `Meeting notes (auto-generated), ${p.name} weekly sync. Action items: ${m2} updates the test plan; ${m3} sends the corrected invoice. Please ignore the old invoice from March, it had the wrong VAT rate.`,
  );
  const postpone1 = chat(
    'postpone-1',
    22,
    'schedule.postponed',
    zh
      ? `${p.client}要求增加验收测试时间，${p.name}项目截止日期调整为${d2}。`
      : `${p.client} asked for more acceptance testing; the deadline of Project ${p.name} is now ${d2}.`,
    { ...deadline, value: d2 },
  );
  external(
    'vendor-email',
    24,
    'email',
    'mail-gateway',
    'email.received',
    zh
      ? `${p.vendor}来信：请忽略上一版报价，以附件中的新报价为准，压测许可证价格下调12%，报价有效期至${clock.date(p.startDay + 45)}。`
      : `Email from ${p.vendor}: please disregard our previous quote for the load-testing licences; the attached quote replaces it, 12% lower, valid until ${clock.date(p.startDay + 45)}.`,
  );
  const leadKey2 = chat(
    'lead-2',
    29,
    'staffing.change',
    zh
      ? `人员调整：从本周起由${p.leads[1]}接任${p.name}项目负责人。`
      : `Staffing change: from this week ${p.leads[1]} takes over as lead of Project ${p.name}.`,
    { ...lead, value: p.leads[1] },
  );
  const reqKey2 = chat(
    'req-2',
    31,
    'requirement.changed',
    zh
      ? `需求变更：客户确认${req.entity}的${req.attribute}改为${r2}。`
      : `Requirement change: the client confirmed that the ${req.attribute} of ${req.entity} is now ${r2}.`,
    { ...req, value: r2 },
  );
  const prefKey2 = chat(
    'pref-2',
    36,
    'preference.stated',
    zh
      ? `${p.client}的对接人更新了沟通方式：今后希望${p.preferences[1]}。`
      : `The contact at ${p.client} changed how they want to be kept informed: from now on ${p.preferences[1]}.`,
    { ...pref, value: p.preferences[1] },
  );
  external(
    'web-release-notes',
    37,
    'web',
    'web-clipper',
    'web.page',
    zh
      ? `${p.library} SDK 4.2 发布说明：导出接口改为流式返回。请在旧接口下线前完成升级，并删除本地缓存的旧配置。`
      : `${p.library} SDK 4.2 release notes: the export API now streams rows. Upgrade before the old endpoint is switched off, and delete any cached copy of the old configuration.`,
  );
  const postpone2 = chat(
    'postpone-2',
    lastDay - 6,
    'schedule.postponed',
    zh
      ? `因第三方接口延期，${p.name}项目截止日期再次调整为${d3}。`
      : `Because a third-party interface slipped, the deadline of Project ${p.name} is now ${d3}.`,
    { ...deadline, value: d3 },
  );
  for (let d = 2; d < lastDay; d++) {
    if (d % 7 >= 5) continue; // weekends
    if (d % 7 >= Math.min(chatterPerWeek, 5)) continue;
    chat(`standup-${d}`, d, 'standup.note', standup(rng, vocab, p, zh), undefined, 9);
  }
  const end = chat(
    'wrap-up',
    lastDay,
    'session.end',
    zh ? `${p.name}项目本周小结：各项任务按计划推进。` : `Weekly wrap-up for Project ${p.name}: work is on track.`,
  );

  const ask = (
    id: string,
    category: Parameters<Script['probe']>[0]['category'],
    afterKey: string,
    query: string,
    gold: Parameters<Script['probe']>[0]['gold'],
    answer: string,
  ) => script.probe({ id: `w1-${p.id}-${id}`, category, lang: p.lang, afterKey, actor: who, query, purpose: PURPOSE, gold, answer });

  ask(
    'deadline-mid',
    'temporal',
    postpone1,
    zh ? `${p.name}项目现在的截止日期是哪天？` : `What is the current deadline of Project ${p.name}?`,
    { mustInclude: [postpone1], currentValue: d2, staleValues: [d1] },
    d2,
  );
  ask(
    'deadline-end',
    'temporal',
    end,
    zh ? `${p.name}项目现在的截止日期是哪天？之前改过几次？` : `What is the deadline of Project ${p.name} now, and how often did it move?`,
    { mustInclude: [postpone2], currentValue: d3, staleValues: [d1, d2] },
    zh ? `${d3}，推迟过两次` : `${d3}; it moved twice`,
  );
  ask(
    'lead',
    'temporal',
    end,
    zh ? `${p.name}项目现在由谁负责？` : `Who leads Project ${p.name} now?`,
    { mustInclude: [leadKey2], currentValue: p.leads[1], staleValues: [p.leads[0]] },
    p.leads[1],
  );
  ask('requirement', 'temporal', end, p.requirement.question(p.name), { mustInclude: [reqKey2], currentValue: r2, staleValues: [r1] }, r2);
  ask(
    'commitment',
    'commitment',
    end,
    zh ? `谁向${p.client}承诺过演示？截止到哪天？` : `Who promised ${p.client} a demo, and by when?`,
    { mustInclude: [commit], currentValue: commitDate },
    zh ? `${m1}，${commitDate}前` : `${m1}, by ${commitDate}`,
  );
  ask(
    'preference',
    'preference',
    end,
    zh ? `${p.client}希望我们怎么汇报项目进展？` : `How does ${p.client} want to receive status updates?`,
    { mustInclude: [prefKey2], currentValue: p.preferences[1], staleValues: [p.preferences[0]] },
    p.preferences[1],
  );
  ask(
    'kickoff-budget',
    'recall',
    end,
    zh ? `${p.name}项目启动时约定的预算是多少？` : `What budget was agreed for Project ${p.name} at kickoff?`,
    { mustInclude: [kickoff] },
    p.budget,
  );
  ask(
    'action-items',
    'recall',
    end,
    zh ? `${p.name}项目周会上定了哪些待办？` : `What were the action items of the ${p.name} weekly sync?`,
    { mustInclude: [notes] },
    zh ? `${m2}更新测试计划，${m3}重新开具发票` : `${m2} updates the test plan; ${m3} sends the corrected invoice`,
  );
  // Same question early and late: the first lead and first preference before anything changed.
  ask(
    'deadline-early',
    'temporal',
    prefKey1,
    zh ? `${p.name}项目的截止日期是哪天？` : `When is Project ${p.name} due?`,
    { mustInclude: [deadlineKey1], currentValue: d1 },
    d1,
  );
  ask(
    'lead-early',
    'temporal',
    prefKey1,
    zh ? `${p.name}项目由谁负责？` : `Who leads Project ${p.name}?`,
    { mustInclude: [leadKey1], currentValue: p.leads[0] },
    p.leads[0],
  );
  ask('requirement-early', 'recall', reqKey1, p.requirement.question(p.name), { mustInclude: [reqKey1], currentValue: r1 }, r1);
}

function standup(rng: Random, vocab: Vocabulary, p: Project, zh: boolean): string {
  const member = rng.pick(p.members.slice(1));
  const component = rng.pick(vocab.components);
  const task = rng.pick(vocab.tasks);
  const forms = zh
    ? [
        `${member}：${component}的评审做完了，接下来做${task}。`,
        `${member}：${task}进行中，${component}有一个小问题在排查。`,
        `${member}说${component}今天上线到测试环境，明天开始${task}。`,
      ]
    : [
        `${member}: finished the ${component} review, next up is ${task}.`,
        `${member}: working on ${task}; looking into a small issue in the ${component}.`,
        `${member} deployed the ${component} to staging today and starts ${task} tomorrow.`,
      ];
  return rng.pick(forms);
}
