/// <reference lib="dom" />
import type { ErasureStatus, ErasureStep } from '@elma/domain';

/** Every text the console shows, in English and Chinese; `{name}` is filled in by `t`. */
const en = {
  title: 'ELMA compliance console',
  language: '中文',
  signOut: 'Sign out',
  signedInAs: '{sub} · tenant {tenant} · {roles}',
  noRoles: 'no roles',
  signInTitle: 'Sign in',
  signInHint:
    'Paste a bearer token. It stays in this browser tab only (session storage) and is sent as an Authorization header, never in a URL. Mint one with:',
  token: 'Bearer token',
  signIn: 'Sign in',
  tabList: 'Erasures',
  tabRequest: 'Request an erasure',
  tabVerify: 'Verify a certificate',
  listTitle: 'Erasure requests',
  status: 'Status',
  anyStatus: 'any status',
  refresh: 'Refresh',
  more: 'Load more',
  noErasures: 'No erasure requests to show.',
  listUnavailable:
    'This ELMA does not list erasures yet (GET /v1/erasures is not available). Open a request by its id below, or request a new one.',
  openById: 'Open a request by id',
  open: 'Open',
  requestId: 'Request',
  reason: 'Reason',
  closure: 'Records',
  currentStep: 'Current step',
  certificate: 'Certificate',
  available: 'available',
  requestTitle: 'Request an erasure',
  requestHint:
    'The closure over lineage (everything derived from the records) is erased. Above the tenant\u2019s approval threshold a dpo other than you must approve.',
  scope: 'Scope',
  scopeSubject: 'A data subject',
  scopeRecords: 'Records by id',
  scopeTimeRange: 'A time range (recorded at)',
  subject: 'Subject id',
  subjectOptional: 'Subject id (optional)',
  recordIds: 'Record ids (one per line)',
  from: 'From',
  to: 'To',
  submit: 'Request erasure',
  reasons: { subject_request: 'Subject request', retention: 'Retention', correction: 'Correction', legal: 'Legal' } as Record<
    string,
    string
  >,
  progressTitle: 'Erasure {id}',
  back: '← All erasures',
  requestedReason: 'Reason',
  closureSize: 'Records in closure',
  approvalDeadline: 'Approve before',
  approvedBy: 'Approved by',
  legalHold: 'Kept under legal hold',
  awaiting: 'This erasure waits for approval by a dpo other than its requester (four eyes).',
  approve: 'Approve erasure',
  approved: 'Approved. The erasure goes on.',
  live: 'Updating live',
  step: 'Step',
  started: 'Started',
  finished: 'Finished',
  duration: 'Duration',
  attempts: 'Attempts',
  pending: 'pending',
  running: 'running…',
  failure: 'Stopped: {code}',
  certificateTitle: 'Erasure certificate',
  downloadJson: 'Download JSON',
  downloadPdf: 'Download PDF',
  issuedAt: 'Issued',
  requestedBy: 'Requested by',
  requestedAt: 'Requested',
  signedBy: 'Signing key',
  byKind: 'Records by kind',
  verification: 'Verification',
  passed: 'passed',
  failed: 'failed',
  probe: '{name}: {checked} checked · {result}',
  auditAnchor: 'Audit anchor',
  nobody: '—',
  verifyTitle: 'Verify a certificate',
  verifyHint:
    'Choose a certificate file (the signed JSON, or the PDF). It is checked against this ELMA\u2019s published signing keys; the file is not stored.',
  file: 'Certificate file',
  verify: 'Verify',
  chooseFile: 'Choose a file first.',
  valid: 'Valid certificate',
  invalid: 'Not valid',
  why: 'Why',
  certifies: 'It certifies',
  kind: 'Kind',
  records: 'Records',
  tenant: 'Tenant',
  kinds: {
    'elma.erasure-certificate': 'erasure certificate',
    'elma.subject-access-manifest': 'subject-access manifest',
    'elma.tenant-offboarding': 'tenant off-boarding certificate',
  } as Record<string, string>,
  statuses: {
    running: 'running',
    awaiting_approval: 'awaiting approval',
    completed: 'certified',
    denied: 'denied',
    approval_timed_out: 'approval timed out',
    verification_failed: 'verification failed',
    failed: 'failed',
  } satisfies Record<ErasureStatus, string> as Record<string, string>,
  /** Every step of the erasure workflow, in the workflow's order (a new step fails the typecheck until named here). */
  steps: {
    authorize: 'Authorize',
    locate: 'Locate records',
    closure: 'Lineage closure',
    legal_hold: 'Legal-hold check',
    approval: 'Approval',
    purge_index: 'Purge index',
    purge_caches: 'Purge caches',
    shred_keys: 'Shred keys',
    delete_streams: 'Delete log streams',
    tombstones: 'Re-derivation tombstones',
    verify: 'Verify by probing',
    certify: 'Sign certificate',
  } satisfies Record<ErasureStep, string> as Record<string, string>,
  problemTitle: 'The request was refused',
  problems: {
    'AUTH.UNAUTHENTICATED': 'Sign in with a bearer token.',
    'AUTH.TOKEN_INVALID': 'This token is not valid here (malformed, or signed by another key).',
    'AUTH.TOKEN_EXPIRED': 'This token has expired: mint a new one and sign in again.',
    'AUTH.TOKEN_REVOKED': 'This token was revoked.',
    'AUTH.FORBIDDEN': 'Your roles do not allow this.',
    'ERASURE.NOT_FOUND': 'No such erasure request (or not one you may see).',
    'ERASURE.SELF_APPROVAL': 'You requested this erasure: another dpo must approve it (four eyes).',
    'ERASURE.NOT_AWAITING_APPROVAL': 'This erasure is not waiting for approval.',
    'ERASURE.CERTIFICATE_NOT_READY': 'The certificate is not ready yet.',
    'CERTIFICATE.UNREADABLE': 'This file is not a certificate.',
    'CERTIFICATE.FORMAT_TOO_NEW': 'This certificate has a newer format than this ELMA reads.',
    'REQUEST.VALIDATION_FAILED': 'Some fields are not valid.',
    'TEMPORAL.UNAVAILABLE': 'The workflow engine is not reachable; try again shortly.',
    NETWORK: 'The ELMA API did not answer.',
  } as Record<string, string>,
  requestIdLabel: 'request id',
  footer: 'ELMA · governed long-term memory',
};

type Texts = typeof en;

const zh: Texts = {
  title: 'ELMA 合规控制台',
  language: 'English',
  signOut: '退出',
  signedInAs: '{sub} · 租户 {tenant} · {roles}',
  noRoles: '无角色',
  signInTitle: '登录',
  signInHint:
    '粘贴一个持有者令牌（bearer token）。它只保存在当前浏览器标签页（会话存储）中，仅作为 Authorization 请求头发送，绝不出现在网址中。生成令牌：',
  token: '持有者令牌',
  signIn: '登录',
  tabList: '删除请求',
  tabRequest: '申请删除',
  tabVerify: '验证证书',
  listTitle: '删除请求',
  status: '状态',
  anyStatus: '全部状态',
  refresh: '刷新',
  more: '加载更多',
  noErasures: '没有可显示的删除请求。',
  listUnavailable: '此 ELMA 尚不支持列出删除请求（GET /v1/erasures 不可用）。可在下方按编号打开请求，或发起新的请求。',
  openById: '按编号打开请求',
  open: '打开',
  requestId: '请求',
  reason: '原因',
  closure: '记录数',
  currentStep: '当前步骤',
  certificate: '证书',
  available: '可下载',
  requestTitle: '申请删除',
  requestHint: '将删除沿数据血缘的闭包（由这些记录派生的一切）。超过租户审批阈值时，须由您以外的另一位数据保护官（dpo）批准。',
  scope: '范围',
  scopeSubject: '某个数据主体',
  scopeRecords: '指定记录编号',
  scopeTimeRange: '某个时间段（按记录时间）',
  subject: '数据主体编号',
  subjectOptional: '数据主体编号（可选）',
  recordIds: '记录编号（每行一个）',
  from: '起',
  to: '止',
  submit: '提交删除申请',
  reasons: { subject_request: '数据主体请求', retention: '保留期满', correction: '更正', legal: '法律要求' },
  progressTitle: '删除请求 {id}',
  back: '← 全部删除请求',
  requestedReason: '原因',
  closureSize: '闭包中的记录',
  approvalDeadline: '审批截止',
  approvedBy: '批准人',
  legalHold: '因法律保全而保留',
  awaiting: '此删除请求正等待申请人以外的数据保护官批准（四眼原则）。',
  approve: '批准删除',
  approved: '已批准，删除继续进行。',
  live: '实时更新中',
  step: '步骤',
  started: '开始',
  finished: '完成',
  duration: '耗时',
  attempts: '尝试次数',
  pending: '等待中',
  running: '进行中…',
  failure: '已停止：{code}',
  certificateTitle: '删除证书',
  downloadJson: '下载 JSON',
  downloadPdf: '下载 PDF',
  issuedAt: '签发时间',
  requestedBy: '申请人',
  requestedAt: '申请时间',
  signedBy: '签名密钥',
  byKind: '按类型统计',
  verification: '验证',
  passed: '通过',
  failed: '未通过',
  probe: '{name}：已检查 {checked} 项 · {result}',
  auditAnchor: '审计锚点',
  nobody: '—',
  verifyTitle: '验证证书',
  verifyHint: '选择证书文件（已签名的 JSON 或 PDF）。将使用此 ELMA 公布的签名公钥进行校验；文件不会被保存。',
  file: '证书文件',
  verify: '验证',
  chooseFile: '请先选择文件。',
  valid: '证书有效',
  invalid: '证书无效',
  why: '原因',
  certifies: '证书内容',
  kind: '类型',
  records: '记录数',
  tenant: '租户',
  kinds: {
    'elma.erasure-certificate': '删除证书',
    'elma.subject-access-manifest': '数据访问清单',
    'elma.tenant-offboarding': '租户注销证书',
  },
  statuses: {
    running: '进行中',
    awaiting_approval: '待批准',
    completed: '已认证',
    denied: '已拒绝',
    approval_timed_out: '审批超时',
    verification_failed: '验证失败',
    failed: '失败',
  },
  steps: {
    authorize: '授权',
    locate: '定位记录',
    closure: '血缘闭包',
    legal_hold: '法律保全检查',
    approval: '审批',
    purge_index: '清除索引',
    purge_caches: '清除缓存',
    shred_keys: '销毁密钥',
    delete_streams: '删除日志流',
    tombstones: '防再派生墓碑',
    verify: '探测验证',
    certify: '签发证书',
  },
  problemTitle: '请求被拒绝',
  problems: {
    'AUTH.UNAUTHENTICATED': '请使用持有者令牌登录。',
    'AUTH.TOKEN_INVALID': '此令牌在这里无效（格式错误，或由其他密钥签名）。',
    'AUTH.TOKEN_EXPIRED': '此令牌已过期：请生成新令牌后重新登录。',
    'AUTH.TOKEN_REVOKED': '此令牌已被吊销。',
    'AUTH.FORBIDDEN': '您的角色不允许此操作。',
    'ERASURE.NOT_FOUND': '没有这个删除请求（或您无权查看）。',
    'ERASURE.SELF_APPROVAL': '此删除由您申请：须由另一位数据保护官批准（四眼原则）。',
    'ERASURE.NOT_AWAITING_APPROVAL': '此删除请求不在等待批准。',
    'ERASURE.CERTIFICATE_NOT_READY': '证书尚未生成。',
    'CERTIFICATE.UNREADABLE': '此文件不是证书。',
    'CERTIFICATE.FORMAT_TOO_NEW': '此证书的格式比本 ELMA 能读取的更新。',
    'REQUEST.VALIDATION_FAILED': '部分字段无效。',
    'TEMPORAL.UNAVAILABLE': '工作流引擎暂不可用，请稍后重试。',
    NETWORK: 'ELMA API 没有响应。',
  },
  requestIdLabel: '请求编号',
  footer: 'ELMA · 受治理的长期记忆',
};

const LANG_KEY = 'elma.console.lang';
export type Lang = 'en' | 'zh';

/** The language chosen here before, else the browser's. */
export function initialLang(): Lang {
  const chosen = localStorage.getItem(LANG_KEY);
  if (chosen === 'en' || chosen === 'zh') return chosen;
  return navigator.language.toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

let current: Texts = en;
let currentLang: Lang = 'en';

export function setLang(lang: Lang): void {
  currentLang = lang;
  current = lang === 'zh' ? zh : en;
  localStorage.setItem(LANG_KEY, lang);
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  document.title = current.title;
}

export const lang = (): Lang => currentLang;
export const texts = (): Texts => current;

type TextKey = { [K in keyof Texts]: Texts[K] extends string ? K : never }[keyof Texts];

export function t(key: TextKey, params: Record<string, string | number> = {}): string {
  return current[key].replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ''));
}

/** Dates as the reader's locale writes them, with seconds. */
export function when(iso: string | null | undefined): string {
  if (!iso) return current.nobody;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(currentLang === 'zh' ? 'zh-CN' : 'en-GB', { hour12: false });
}
