/**
 * A deterministic synthetic corpus for benchmarks: business chatter in
 * English and Chinese, half each, from fixed vocabularies and a seeded PRNG,
 * so every run measures the same texts.
 */
const EN = `customer delivery risk contract renewal invoice payment shipment warehouse order ticket escalation
support engineer manager budget forecast quarter revenue discount pricing proposal meeting agenda deadline
milestone project release feature bug outage incident postmortem latency database migration security audit
compliance policy vendor supplier logistics inventory backlog sprint roadmap onboarding training license
subscription churn upsell account region europe asia america berlin shanghai london tokyo approval legal
finance procurement hardware software cloud network router firewall backup restore password reset login
complaint refund warranty repair replacement schedule delay priority urgent followup callback email phone
chat survey feedback satisfaction score dashboard report analytics metric target goal plan strategy team`
  .split(/\s+/)
  .filter(Boolean);

const ZH = `客户 交付 风险 合同 续约 发票 付款 发货 仓库 订单 工单 升级 支持 工程师 经理 预算 预测 季度 收入 折扣
定价 方案 会议 议程 截止 里程碑 项目 发布 功能 缺陷 故障 事故 复盘 延迟 数据库 迁移 安全 审计 合规 政策
供应商 物流 库存 待办 迭代 路线图 入职 培训 许可 订阅 流失 追加 账户 区域 欧洲 亚洲 美洲 柏林 上海 伦敦
东京 审批 法务 财务 采购 硬件 软件 云 网络 路由器 防火墙 备份 恢复 密码 重置 登录 投诉 退款 保修 维修
更换 日程 延期 优先级 紧急 跟进 回访 邮件 电话 聊天 调查 反馈 满意度 评分 看板 报告 分析 指标 目标 计划 策略 团队`
  .split(/\s+/)
  .filter(Boolean);

/** mulberry32: small, fast, and the same sequence on every platform (the bench corpus and the eval bootstrap). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: () => number, items: T[]) => items[Math.floor(random() * items.length)];

export function sentence(random: () => number, chinese: boolean): string {
  const words = Array.from({ length: 10 + Math.floor(random() * 12) }, () => pick(random, chinese ? ZH : EN));
  return chinese ? `${words.join('')}。` : `${words.join(' ')}.`;
}

export function query(random: () => number): string {
  const chinese = random() < 0.5;
  const words = Array.from({ length: 2 + Math.floor(random() * 2) }, () => pick(random, chinese ? ZH : EN));
  return words.join(chinese ? '' : ' ');
}

/** How many data subjects the corpus's events are about (each about 1/200 of a tenant's memories). */
export const CORPUS_SUBJECTS = 200;

export function eventBatch(random: () => number, size: number, offset: number, tenant: string) {
  return {
    events: Array.from({ length: size }, (_, i) => ({
      subject: `subject-${Math.floor(random() * CORPUS_SUBJECTS)}`,
      occurredAt: new Date(Date.UTC(2026, 0, 1) + (offset + i) * 60_000).toISOString(),
      activity: 'chat.turn',
      content: { text: sentence(random, random() < 0.5) },
      source: { system: 'bench', externalId: `${tenant}-${offset + i}`, channel: 'chat' },
      purposes: ['support'],
    })),
  };
}
