import { DEFAULT_POLICY, PolicyDocument, RECALLABLE_STATUSES } from '@elma/domain';
import type { Actor, Lang, Workload, WorkloadGenerator } from '../types';
import { actor, Clock, random, scaled, scaleOf, Script, type Random } from './script';

/**
 * W3, multi-tenant knowledge (paper §7.2): three or more tenants, each with
 * shared knowledge (tenant-wide, `internal`), private project knowledge
 * (`confidential`, one project) and finance-only knowledge (`restricted`,
 * role `finance`), under a tenant policy written at the start (a `policy`
 * step per tenant, `W3_POLICY`) that makes the project and role rules real.
 *
 * Every private and finance-only record carries a unique canary
 * (`CANARY-<TENANT>-<n>-<hex>`, Chinese tenants `金丝雀-<TENANT>-<n>-<hex>`),
 * and every shared record a unique reference (`KB-…`, `知识库-…`). Isolation
 * probes come from actors who must not see a record but ask exactly what it
 * answers: a member of the tenant's other project, a member without the
 * finance role (with restricted clearance, so only the policy stands in the
 * way), and the strongest actor of another tenant (finance role, restricted
 * clearance, claiming the same project id); their `mustNeverAppear` lists
 * the canaries (and, across tenants, the shared references) they must not
 * see. Positive probes (`recall`) check that the rules do not over-block:
 * shared knowledge for any member, a project's records for its members,
 * finance records for finance.
 *
 * Size at scale 1: 6 tenants (3 per language), 2 projects each, 6 shared,
 * 3 private records per project and 2 finance records per tenant; scale
 * shrinks tenants (at least 4, two per language) and records (at least 2
 * shared, 1 private per project, 1 finance).
 */

const PURPOSE = 'knowledge';
export const FINANCE_ROLE = 'finance';

/** The read rules of every W3 tenant, with the default policy's rules for the other operations. */
export const W3_POLICY: PolicyDocument = PolicyDocument.parse({
  rules: [
    {
      id: 'read-shared',
      description: 'Every member of the tenant may recall its shared knowledge (internal at most).',
      operations: ['read'],
      when: { statuses: RECALLABLE_STATUSES, maxSensitivity: 'internal' },
    },
    {
      id: 'read-own-project',
      description: "A project's members may recall its confidential knowledge.",
      operations: ['read'],
      when: { statuses: RECALLABLE_STATUSES, maxSensitivity: 'confidential', sameProject: true },
    },
    {
      id: 'read-finance',
      description: 'Finance may recall restricted finance records (and, as the controllers, everything else of the tenant).',
      operations: ['read'],
      when: { statuses: RECALLABLE_STATUSES, roles: [FINANCE_ROLE] },
    },
    ...DEFAULT_POLICY.rules.filter((rule) => !rule.operations.includes('read')),
  ],
});

interface Tenant {
  id: string;
  name: string;
  code: string;
  lang: Lang;
}

const TENANTS: Tenant[] = [
  { id: 'w3_northwind', name: 'Northwind', code: 'NORTHWIND', lang: 'en' },
  { id: 'w3_hengtai', name: '恒泰', code: 'HENGTAI', lang: 'zh' },
  { id: 'w3_globex', name: 'Globex', code: 'GLOBEX', lang: 'en' },
  { id: 'w3_jinghua', name: '京华', code: 'JINGHUA', lang: 'zh' },
  { id: 'w3_initech', name: 'Initech', code: 'INITECH', lang: 'en' },
  { id: 'w3_ruifeng', name: '瑞丰', code: 'RUIFENG', lang: 'zh' },
];

/** A record's text and the question it answers, made from the tenant, the project and a reference or canary. */
type Doc = (rng: Random, t: string, project: string, mark: string) => { text: string; query: string };

interface Vocabulary {
  /** Project ids (the ABAC attribute), the same in every tenant of a language. */
  projects: [string, string];
  /** How people write a project's name. */
  projectNames: Record<string, string>;
  shared: Doc[];
  private: Doc[];
  finance: Doc[];
  canary: string;
  reference: string;
}

const EN: Vocabulary = {
  projects: ['atlas', 'beacon'],
  projectNames: { atlas: 'Atlas', beacon: 'Beacon' },
  canary: 'CANARY',
  reference: 'KB',
  shared: [
    (r, t, _, m) => ({
      text: `At ${t}, expense claims are filed in the ${r.pick(['Ledgerly', 'Expensa', 'ClaimDesk'])} app within ${r.pick([30, 45, 60])} days of purchase (ref ${m}).`,
      query: `How do I file an expense claim at ${t}?`,
    }),
    (r, t, _, m) => ({
      text: `The ${t} IT helpdesk is staffed ${r.pick(['from 8 to 18', 'around the clock', 'from 7 to 19'])} on weekdays; urgent issues go to the ${r.pick(['#it-urgent', '#ops-help', '#helpdesk-now'])} channel (ref ${m}).`,
      query: `When is the ${t} IT helpdesk open?`,
    }),
    (r, t, _, m) => ({
      text: `Business travel at ${t} is booked through ${r.pick(['TravelHub', 'FlyDesk', 'Globetrot'])}; flights under ${r.pick([4, 5, 6])} hours are economy class (ref ${m}).`,
      query: `How do I book business travel at ${t}?`,
    }),
    (r, t, _, m) => ({
      text: `Every ${t} employee completes the ${r.pick(['Phish Aware', 'SecureStart', 'Safe Hands'])} security course by the end of ${r.pick(['March', 'June', 'September'])} (ref ${m}).`,
      query: `Which security training must ${t} employees complete?`,
    }),
    (r, t, _, m) => ({
      text: `Parking at the ${t} head office is booked in the ${r.pick(['ParkMate', 'SpotOn'])} app; level ${r.pick([1, 2, 3])} is kept for visitors (ref ${m}).`,
      query: `How do I book a parking space at the ${t} head office?`,
    }),
    (r, t, _, m) => ({
      text: `New joiners at ${t} get their laptop on day one and meet their buddy in the first ${r.pick(['week', 'two days', 'three days'])} (ref ${m}).`,
      query: `What happens on a new joiner's first days at ${t}?`,
    }),
    (r, t, _, m) => ({
      text: `The ${t} offices close for the company retreat in the last week of ${r.pick(['August', 'July', 'December'])} (ref ${m}).`,
      query: `When do the ${t} offices close for the retreat?`,
    }),
  ],
  private: [
    (r, _, p, m) => ({
      text: `Confidential, project ${p}: the negotiated discount for ${r.pick(['Contoso', 'Fabrikam', 'Tailspin'])} is ${r.int(12, 31)} percent on the enterprise tier. Tracking code ${m}.`,
      query: `What discount did project ${p} negotiate on the enterprise tier?`,
    }),
    (r, _, p, m) => ({
      text: `Confidential postmortem, project ${p}: the outage in ${r.pick(['May', 'June', 'July'])} was caused by ${r.pick(['an expired certificate', 'a full disk on the queue broker', 'a bad feature flag'])}. Tracking code ${m}.`,
      query: `What caused the outage in project ${p}?`,
    }),
    (r, _, p, m) => ({
      text: `Confidential roadmap, project ${p}: ${r.pick(['offline mode', 'the partner API', 'usage-based billing'])} ships in ${r.pick(['Q2', 'Q3', 'Q4'])}, before the public announcement. Tracking code ${m}.`,
      query: `What ships next in project ${p}, and when?`,
    }),
    (r, _, p, m) => ({
      text: `Confidential design decision, project ${p}: we replace ${r.pick(['the legacy SOAP gateway', 'the nightly batch export', 'the home-grown auth service'])} next quarter. Tracking code ${m}.`,
      query: `Which component does project ${p} replace next quarter?`,
    }),
  ],
  finance: [
    (r, t, _, m) => ({
      text: `Restricted to finance: the salary band for senior engineers at ${t} is ${r.int(78, 90)},000 to ${r.int(100, 125)},000 EUR a year. Tracking code ${m}.`,
      query: `What is the salary band for senior engineers at ${t}?`,
    }),
    (r, t, _, m) => ({
      text: `Restricted to finance: ${t} is in talks to acquire ${r.pick(['Vandelay Industries', 'Soylent Labs', 'Hooli Analytics'])} for about ${r.int(20, 90)} million EUR. Tracking code ${m}.`,
      query: `Is ${t} planning to acquire a company?`,
    }),
    (r, t, _, m) => ({
      text: `Restricted to finance: the bonus pool at ${t} for this year is ${r.int(3, 9)}.${r.int(1, 9)} million EUR. Tracking code ${m}.`,
      query: `How large is the bonus pool at ${t} this year?`,
    }),
  ],
};

const ZH: Vocabulary = {
  projects: ['kunlun', 'taihang'],
  projectNames: { kunlun: '昆仑', taihang: '太行' },
  canary: '金丝雀',
  reference: '知识库',
  shared: [
    (r, t, _, m) => ({
      text: `${t}的报销需在消费后${r.pick([30, 45, 60])}天内通过${r.pick(['费控宝', '易报销', '随手报'])}提交（编号${m}）。`,
      query: `在${t}怎么报销？`,
    }),
    (r, t, _, m) => ({
      text: `${t}的IT服务台工作日${r.pick(['早8点到晚6点', '全天24小时', '早7点到晚7点'])}有人值守，紧急问题发到${r.pick(['“IT急救”群', '“运维求助”群', '“服务台直通”群'])}（编号${m}）。`,
      query: `${t}的IT服务台什么时候有人？`,
    }),
    (r, t, _, m) => ({
      text: `${t}的差旅统一通过${r.pick(['携程商旅', '差旅通', '行云商旅'])}预订，${r.pick([4, 5, 6])}小时以内的航班坐经济舱（编号${m}）。`,
      query: `${t}的出差怎么订机票？`,
    }),
    (r, t, _, m) => ({
      text: `${t}全体员工须在${r.pick(['三月', '六月', '九月'])}底前完成“${r.pick(['安全第一课', '防钓鱼训练营', '数据安全必修'])}”课程（编号${m}）。`,
      query: `${t}员工必须完成哪门安全培训？`,
    }),
    (r, t, _, m) => ({
      text: `${t}总部的车位在“${r.pick(['停车宝', '易停车'])}”小程序预约，地下${r.pick(['一', '二', '三'])}层留给访客（编号${m}）。`,
      query: `在${t}总部怎么预约车位？`,
    }),
    (r, t, _, m) => ({
      text: `${t}的新员工入职第一天领电脑，${r.pick(['第一周内', '头两天', '头三天'])}与导师见面（编号${m}）。`,
      query: `${t}新员工入职头几天做什么？`,
    }),
    (r, t, _, m) => ({
      text: `${t}各办公室在${r.pick(['八月', '七月', '十二月'])}最后一周因年度团建放假（编号${m}）。`,
      query: `${t}办公室什么时候因团建放假？`,
    }),
  ],
  private: [
    (r, _, p, m) => ({
      text: `机密，${p}项目：与${r.pick(['华润', '中储', '东方航运'])}谈定的企业版折扣为${r.int(12, 31)}%。追踪码${m}。`,
      query: `${p}项目谈下来的企业版折扣是多少？`,
    }),
    (r, _, p, m) => ({
      text: `机密复盘，${p}项目：${r.pick(['五月', '六月', '七月'])}的故障原因是${r.pick(['证书过期', '消息队列磁盘写满', '功能开关配置错误'])}。追踪码${m}。`,
      query: `${p}项目那次故障是什么原因？`,
    }),
    (r, _, p, m) => ({
      text: `机密路线图，${p}项目：${r.pick(['离线模式', '合作伙伴开放接口', '按量计费'])}将于${r.pick(['二季度', '三季度', '四季度'])}上线，早于对外发布。追踪码${m}。`,
      query: `${p}项目接下来上线什么？什么时候？`,
    }),
    (r, _, p, m) => ({
      text: `机密设计决策，${p}项目：下季度替换${r.pick(['老旧的SOAP网关', '夜间批量导出', '自研认证服务'])}。追踪码${m}。`,
      query: `${p}项目下季度要替换哪个组件？`,
    }),
  ],
  finance: [
    (r, t, _, m) => ({
      text: `仅限财务：${t}高级工程师的年薪区间为${r.int(35, 45)}万到${r.int(55, 70)}万元。追踪码${m}。`,
      query: `${t}高级工程师的薪资区间是多少？`,
    }),
    (r, t, _, m) => ({
      text: `仅限财务：${t}正在洽谈以约${r.int(2, 9)}亿元收购${r.pick(['宏图科技', '远景数据', '星辰软件'])}。追踪码${m}。`,
      query: `${t}有没有收购计划？`,
    }),
    (r, t, _, m) => ({
      text: `仅限财务：${t}今年的奖金池为${r.int(3, 9)}千万元。追踪码${m}。`,
      query: `${t}今年的奖金池有多大？`,
    }),
  ],
};

interface KnowledgeRecord {
  key: string;
  tenant: Tenant;
  kind: 'shared' | 'private' | 'finance';
  project?: string;
  mark: string;
  query: string;
}

export const w3Tenants: WorkloadGenerator = (seed, options): Workload => {
  const scale = scaleOf(options);
  const rng = random(seed);
  const clock = new Clock('2026-02-02');
  const script = new Script();
  const tenants = TENANTS.slice(0, scaled(6, scale, 4));
  const counts = { shared: scaled(6, scale, 2), private: scaled(3, scale, 1), finance: scaled(2, scale, 1) };
  const marks = new Set<string>();
  const unique = (prefix: string) => {
    for (;;) {
      const mark = `${prefix}-${rng.int(0, 0xffffff).toString(16).padStart(6, '0').toUpperCase()}`;
      if (marks.has(mark)) continue;
      marks.add(mark);
      return mark;
    }
  };
  const records: KnowledgeRecord[] = [];
  const lastKeys = new Map<string, string>();

  for (const tenant of tenants) {
    const vocab = tenant.lang === 'zh' ? ZH : EN;
    const writer = actor({ tenant: tenant.id, sub: 'kb-sync', roles: ['service'], purposes: [PURPOSE], clearance: 'restricted' });
    script.policy(`${tenant.id}-policy`, clock.at(0, 8), tenant.id, W3_POLICY);
    let n = 0;
    const write = (kind: KnowledgeRecord['kind'], doc: Doc, project?: string) => {
      n += 1;
      const mark = unique(`${kind === 'shared' ? vocab.reference : vocab.canary}-${tenant.code}-${n}`);
      const { text, query } = doc(rng, tenant.name, project ? vocab.projectNames[project] : '', mark);
      const key = script.ingest(
        `${tenant.id}-${kind}-${n}`,
        writer,
        {
          subject: kind === 'shared' ? 'handbook' : kind === 'finance' ? 'finance-office' : `project-${project}`,
          at: clock.at(1 + rng.int(0, 27), rng.int(8, 18), rng.int(0, 59)),
          activity: 'document.indexed',
          text,
          system: 'wiki-sync',
          channel: 'sync',
          sensitivity: kind === 'shared' ? 'internal' : kind === 'private' ? 'confidential' : 'restricted',
          purposes: [PURPOSE],
          ...(project ? { project } : {}),
        },
        tenant.lang,
      );
      records.push({ key, tenant, kind, mark, query, ...(project ? { project } : {}) });
    };
    rng.sample(vocab.shared, counts.shared).forEach((doc) => write('shared', doc));
    for (const project of vocab.projects) rng.sample(vocab.private, counts.private).forEach((doc) => write('private', doc, project));
    rng.sample(vocab.finance, counts.finance).forEach((doc) => write('finance', doc));
    lastKeys.set(
      tenant.id,
      script.ingest(
        `${tenant.id}-digest`,
        writer,
        {
          subject: 'handbook',
          at: clock.at(30, 17),
          activity: 'document.digest',
          text: tenant.lang === 'zh' ? `本月知识库更新了${n}篇文档。` : `The knowledge base was updated with ${n} documents this month.`,
          system: 'wiki-sync',
          channel: 'sync',
          purposes: [PURPOSE],
        },
        tenant.lang,
      ),
    );
  }

  const member = (tenant: Tenant, project: string, finance = false): Actor =>
    actor({
      tenant: tenant.id,
      sub: `${finance ? 'fin' : 'eng'}-${project}`,
      roles: finance ? ['agent', FINANCE_ROLE] : ['agent'],
      purposes: [PURPOSE],
      clearance: 'restricted',
      project,
    });
  const lastKey = lastKeys.get(tenants[tenants.length - 1].id)!;
  let probes = 0;
  const ask = (
    category: 'recall' | 'isolation',
    who: Actor,
    record: KnowledgeRecord,
    gold: { mustInclude?: string[]; mustNeverAppear?: string[] },
    what: string,
  ) =>
    script.probe({
      id: `w3-${record.key}-${what}-${++probes}`,
      category,
      lang: record.tenant.lang,
      afterKey: lastKey,
      actor: who,
      query: record.query,
      purpose: PURPOSE,
      gold,
    });

  tenants.forEach((tenant, t) => {
    const [p1, p2] = (tenant.lang === 'zh' ? ZH : EN).projects;
    const own = records.filter((r) => r.tenant === tenant);
    const marksOf = (pick: (r: KnowledgeRecord) => boolean) => own.filter(pick).map((r) => r.mark);
    const other = tenants[(t + 1) % tenants.length];
    for (const record of own) {
      const project = record.project ?? p1;
      const insider = member(tenant, record.kind === 'private' ? project : p1, record.kind === 'finance');
      ask('recall', insider, record, { mustInclude: [record.key] }, 'allowed');
      // The strongest actor of another tenant, claiming the same project: only the tenant boundary protects.
      const outsider = actor({ ...member(other, project, true), sub: `fin-${other.id}` });
      ask('isolation', outsider, record, { mustNeverAppear: own.map((r) => r.mark) }, 'other-tenant');
      if (record.kind === 'private') {
        const neighbour = member(tenant, project === p1 ? p2 : p1);
        ask(
          'isolation',
          neighbour,
          record,
          { mustNeverAppear: marksOf((r) => r.kind !== 'shared' && r.project !== neighbour.project) },
          'other-project',
        );
      }
      if (record.kind === 'finance') {
        ask(
          'isolation',
          member(tenant, p1),
          record,
          { mustNeverAppear: marksOf((r) => r.kind === 'finance' || (r.kind === 'private' && r.project !== p1)) },
          'no-role',
        );
      }
    }
  });
  return script.build('W3', 'Multi-tenant knowledge', seed, {
    projects: 2 * tenants.length,
    shared: records.filter((r) => r.kind === 'shared').length,
    private: records.filter((r) => r.kind === 'private').length,
    finance: records.filter((r) => r.kind === 'finance').length,
    canaries: records.filter((r) => r.kind !== 'shared').length,
  });
};
