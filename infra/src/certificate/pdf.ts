import { createHash } from 'node:crypto';
import {
  canonicalJson,
  MemoryKind,
  SUBJECT_PSEUDONYM,
  type ErasureCertificate,
  type ErasureReason,
  type SignedCertificate,
} from '@elma/domain';
import { PdfLayout, type PdfAttachment } from '../pdf/document';

/** The layout this build renders; a verifier compares a page with its own rendering only for the same layout. */
export const CERTIFICATE_PDF_LAYOUT = 'elma.erasure-certificate.pdf/1';
/** The attachment that carries the signed certificate inside the PDF. */
export const CERTIFICATE_ATTACHMENT = 'certificate.json';

/**
 * Renders a signed erasure certificate as a PDF for people who do not read JSON (DPOs, auditors, a
 * regulator). The signed JSON is attached inside the PDF (`certificate.json`), so the PDF verifies on its own
 * (`elma verify-certificate certificate.pdf`), and every fingerprint printed on the page is explained in plain
 * words. Same certificate, same text: the PDF's dates are the certificate's.
 */
export async function renderCertificatePdf(signed: SignedCertificate): Promise<Buffer> {
  const c = signed.certificate;
  const layout = new PdfLayout(
    {
      title: `Erasure certificate ${c.requestId}`,
      author: c.organisation ?? 'ELMA',
      subject: `Erasure certificate ${c.requestId}, tenant ${c.tenant}: ${c.closure.size} records erased, verification ${c.verification.passed ? 'passed' : 'failed'}`,
      keywords: 'ELMA, erasure certificate, GDPR Art. 17, 数据删除证明',
      lang: 'en',
      createdAt: new Date(c.issuedAt),
      layout: CERTIFICATE_PDF_LAYOUT,
    },
    { body: 9.5, table: 8, label: 8.5 },
  );
  writeCertificate(layout, signed);
  return layout.finish(`${c.organisation ? `${c.organisation} · ` : ''}ELMA erasure certificate ${c.requestId}`, [
    certificateAttachment(signed),
  ]);
}

/** The signed certificate as attached: pretty JSON, which `elma verify-certificate` reads like the downloaded file. */
export function certificateAttachment(signed: SignedCertificate): PdfAttachment {
  return {
    name: CERTIFICATE_ATTACHMENT,
    mediaType: 'application/json',
    description: 'The signed erasure certificate (Ed25519 over its canonical JSON): the authoritative document this PDF renders.',
    bytes: Buffer.from(`${JSON.stringify(signed, null, 2)}\n`, 'utf8'),
  };
}

/** Lists that grow with the closure are cut to this many rows. */
const LIST_LIMIT = 10;

const REASONS: Record<ErasureReason, string> = {
  subject_request: 'Data subject request 数据主体请求',
  retention: 'Retention period ended 保留期届满',
  correction: 'Correction 更正',
  legal: 'Legal obligation 法定义务',
};

function writeCertificate(layout: PdfLayout, signed: SignedCertificate): void {
  const { certificate: c } = signed;
  layout.title(c.organisation ? `${c.organisation}` : 'ELMA', 'Erasure certificate · 数据删除证明');
  layout.paragraph(
    'A signed statement that the records below were erased, what the erasure covered and how it was checked. The signed ' +
      'JSON certificate attached to this PDF (certificate.json) is the authoritative document; this page renders it.',
    { grey: true },
  );
  layout.paragraph(
    '本证明经数字签名，说明下列记录已被删除、删除范围以及核验方式。本 PDF 附带的已签名 JSON 证书（certificate.json）为权威文本，本页为其可读呈现。',
    {
      grey: true,
    },
  );

  layout.heading('Result 结果');
  layout.field('Verification 核验', c.verification.passed ? 'PASSED 通过' : 'FAILED 未通过', { font: 'bold' });
  layout.field('Records erased 已删除记录', String(c.closure.size));
  layout.field('Issued at 签发时间', c.issuedAt);

  writeRequest(layout, c);
  writeClosure(layout, c);
  writeSteps(layout, c);
  writeVerification(layout, c.verification);

  layout.heading('Audit anchor 审计锚点');
  layout.field('Sequence 序号', String(c.auditAnchor.seq));
  layout.field('Entry hash 条目哈希', c.auditAnchor.hash);

  writeSignature(layout, signed);
  writeExplanations(layout, c);
  writeHowToVerify(layout);
}

function writeRequest(layout: PdfLayout, c: ErasureCertificate): void {
  layout.heading('Request 请求');
  if (c.organisation) layout.field('Organisation 机构', c.organisation);
  layout.field('Tenant 租户', c.tenant);
  layout.field('Request id 请求编号', c.requestId);
  layout.field('Reason 原因', `${REASONS[c.request.reason]} (${c.request.reason})`);
  layout.field('Requested by 申请人', requesterText(c));
  layout.field('Requested at 申请时间', c.request.requestedAt);
  layout.field(
    'Approved by 批准人',
    c.request.approvedBy === null ? 'not required 无需批准' : person(c.request.approvedByName, c.request.approvedBy),
  );
  layout.field('Approved at 批准时间', c.request.approvedAt ?? 'not required 无需批准');
  writeScope(layout, c.request.scope);
}

/** Staff by display name and token subject; a data subject who asked for their own erasure by pseudonym only. */
function requesterText(c: ErasureCertificate): string {
  const { requestedBy, requestedByName, scope } = c.request;
  const subjectPseudonym = 'subjectPseudonym' in scope ? scope.subjectPseudonym : undefined;
  if (SUBJECT_PSEUDONYM.test(requestedBy) && requestedBy === subjectPseudonym) {
    return `the data subject, by pseudonym 数据主体本人（以假名表示） ${requestedBy}`;
  }
  return person(requestedByName, requestedBy);
}

const person = (name: string | undefined, id: string) => (name ? `${name} (${id})` : id);

/** The closure's counts, then its records and the legal-hold exceptions, each list cut at LIST_LIMIT rows. */
function writeClosure(layout: PdfLayout, c: ErasureCertificate): void {
  layout.heading('Closure 删除范围');
  layout.field('Records erased 记录', String(c.closure.size));
  layout.field('By kind 按类型', MemoryKind.options.map((kind) => `${kind} ${c.closure.byKind[kind] ?? 0}`).join(', '));
  layout.field('Events 事件', String(c.closure.events));
  layout.field('Streams deleted 已删除流', String(c.closure.streamsDeleted));
  layout.field('Keys shredded 已销毁密钥', String(c.closure.keysShredded));
  layout.field('Tombstones 墓碑', String(c.closure.tombstones));
  layout.field('Legal holds 法律保全', `${c.legalHoldExceptions.length} record(s) kept 条记录保留`);
  if (c.closure.records.length > 0) {
    layout.gap(4);
    layout.table(
      [
        { header: 'Record 记录', width: 200 },
        { header: 'Kind 类型', width: 80 },
        { header: 'Content fingerprint 内容指纹', width: 203 },
      ],
      c.closure.records.slice(0, LIST_LIMIT).map((r) => [r.id, r.kind, abbreviate(r.contentFingerprint)]),
    );
    more(layout, c.closure.records.length);
  }
  if (c.legalHoldExceptions.length > 0) {
    layout.gap(4);
    layout.paragraph('Kept because of a legal hold 因法律保全而保留:');
    layout.table(
      [
        { header: 'Record 记录', width: 230 },
        { header: 'Legal holds 法律保全', width: 253 },
      ],
      c.legalHoldExceptions.slice(0, LIST_LIMIT).map((e) => [e.recordId, e.holdIds.join(', ')]),
    );
    more(layout, c.legalHoldExceptions.length);
  }
}

function writeSteps(layout: PdfLayout, c: ErasureCertificate): void {
  layout.heading('Steps 步骤', layout.tableHeight(c.steps.length));
  layout.table(
    [
      { header: 'Step 步骤', width: 113 },
      { header: 'Started 开始', width: 150 },
      { header: 'Finished 结束', width: 150 },
      { header: 'Attempts 尝试', width: 70, align: 'right' },
    ],
    c.steps.map((s) => [s.step, s.startedAt, s.finishedAt, String(s.attempts)]),
  );
}

/** One row per probe, then what the byte scan covered and the result. */
function writeVerification(layout: PdfLayout, v: ErasureCertificate['verification']): void {
  layout.heading('Verification 核验', layout.tableHeight(5) + layout.fieldsHeight(4));
  layout.table(
    [
      { header: 'Probe 探测', width: 203 },
      { header: 'Checked 检查', width: 93, align: 'right' },
      { header: 'Failed 失败', width: 93, align: 'right' },
      { header: 'Skipped 跳过', width: 94, align: 'right' },
    ],
    (
      [
        ['getById', 'Read by id 按编号读取', v.getById],
        ['bm25', 'Full-text search 全文检索', v.bm25],
        ['knn', 'Vector search 向量检索', v.knn],
        ['decrypt', 'Decrypt 解密尝试', v.decrypt],
        ['byteScan', 'Byte scan 字节扫描', v.byteScan],
      ] as const
    ).map(([name, label, p]) => [`${label} (${name})`, String(p.checked), String(p.failed), String(p.skipped)]),
  );
  layout.field('Files scanned 扫描文件', String(v.byteScan.files));
  layout.field('Bytes scanned 扫描字节', String(v.byteScan.bytes));
  layout.field('Rounds 轮次', String(v.rounds));
  layout.field('Result 结果', v.passed ? 'PASSED 通过' : 'FAILED 未通过', { font: 'bold' });
}

function writeSignature(layout: PdfLayout, { certificate, signature }: SignedCertificate): void {
  layout.heading('Signature 签名', layout.fieldsHeight(5));
  layout.field('Algorithm 算法', `${signature.alg} (Ed25519)`);
  layout.field('Key id 密钥编号', signature.kid);
  layout.field('Signature fingerprint 签名指纹', signatureFingerprint(signature.value));
  layout.field('Document fingerprint 文档指纹', documentFingerprint(certificate));
}

/** SHA-256 of the signature value, the first 32 hex digits: a short handle for the signature, printable on paper. */
export function signatureFingerprint(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}

/** SHA-256 of the canonical JSON the signature covers. */
export function documentFingerprint(certificate: ErasureCertificate): string {
  return createHash('sha256').update(canonicalJson(certificate)).digest('hex');
}

/** What each number on the page is, in plain words, for a reader who is not a cryptographer. */
function writeExplanations(layout: PdfLayout, c: ErasureCertificate): void {
  layout.heading('What the numbers mean 各项指纹的含义', layout.fieldsHeight(6));
  const explain = (label: string, en: string, zh: string) => {
    layout.paragraph(label, { font: 'bold' });
    layout.paragraph(en);
    layout.paragraph(zh, { grey: true });
  };
  explain(
    'Content fingerprint 内容指纹',
    "A keyed hash (HMAC-SHA-256 under the tenant's key) of each erased record's text. It lets the issuer show that a given text " +
      'was among the erased records without keeping the text; without the key nobody can compute it, so it reveals nothing about the content.',
    '每条已删除记录文本的带密钥哈希（以租户密钥计算的 HMAC-SHA-256）。签发方可据此证明某段文本属于被删除的记录，而无需保留原文；没有密钥的人无法计算，因此不泄露内容。',
  );
  const scope = c.request.scope;
  if ('subjectPseudonym' in scope && scope.subjectPseudonym) {
    explain(
      'Subject pseudonym 数据主体假名',
      "The random name under which the data subject's records were stored. The erasure destroyed the only link between this name and the " +
        "person, so the certificate names nobody: it outlives the erasure without keeping the person's identity.",
      '数据主体记录存储时所用的随机名称。删除操作已销毁该名称与本人之间的唯一关联，因此本证明不指向任何人：证明在删除之后仍然保留，但不保留本人身份。',
    );
  }
  if ('subjectFingerprint' in scope && scope.subjectFingerprint) {
    explain(
      'Subject fingerprint 数据主体指纹',
      "A keyed hash of the data subject's id (certificates issued before pseudonyms): it names the subject without spelling out the id.",
      '数据主体编号的带密钥哈希（启用假名之前签发的证明）：它指代数据主体，但不写出其编号。',
    );
  }
  if (scope.type === 'fingerprint') {
    explain(
      'Scope fingerprint 范围指纹',
      'The keyed hash of the text whose records were asked to be erased; the text itself was never stored.',
      '被请求删除内容文本的带密钥哈希；该文本本身从未被保存。',
    );
  }
  explain(
    'Audit anchor 审计锚点',
    "The sequence number and SHA-256 hash of the entry in the tenant's audit trail that closed this erasure. Each entry's hash covers the " +
      'previous one, so the trail cannot be changed before this entry without the hash changing: the audit verification (POST /v1/audit/verify) checks it.',
    '租户审计链中结束本次删除的条目的序号与 SHA-256 哈希。每个条目的哈希都涵盖前一条目，因此此前的审计记录一旦被改动，哈希就会改变；可通过审计校验（POST /v1/audit/verify）核对。',
  );
  explain(
    'Key id, signature and fingerprints 密钥编号、签名与指纹',
    'The certificate is signed with Ed25519, a digital signature: only the holder of the private key could have made it, and any change to the ' +
      "certificate breaks it. The key id names the public key to check it with (from the issuer's key set). The signature fingerprint is " +
      'a short SHA-256 handle of the signature; the document fingerprint is the SHA-256 of exactly what was signed. Neither is secret.',
    '本证明以 Ed25519 数字签名：只有私钥持有者能够生成该签名，证明内容的任何改动都会使签名失效。密钥编号指明用于核验的公钥（见签发方公布的密钥集）。签名指纹是签名的 SHA-256 简短标识；文档指纹是被签名内容的 SHA-256。二者均非机密。',
  );
}

function writeHowToVerify(layout: PdfLayout): void {
  layout.heading('How to verify 如何核验', layout.fieldsHeight(6));
  layout.paragraph(
    "This PDF carries the signed certificate inside it and verifies on its own, offline. Once, export the issuer's public keys: " +
      '"elma keys export --out elma-keys.json" (or save its /.well-known/elma-keys). Then run ' +
      '"elma verify-certificate certificate.pdf --jwks elma-keys.json": it checks the signature of the attached certificate and that ' +
      'this page shows that certificate.',
  );
  layout.paragraph(
    '本 PDF 内含已签名证书，可离线独立核验。先导出一次签发方公钥："elma keys export --out elma-keys.json"（或保存其 /.well-known/elma-keys），' +
      '再运行 "elma verify-certificate certificate.pdf --jwks elma-keys.json"：它核验所附证书的签名，并确认本页所示即该证书。',
    { grey: true },
  );
}

function writeScope(layout: PdfLayout, scope: ErasureCertificate['request']['scope']): void {
  const label = 'Scope 范围';
  switch (scope.type) {
    case 'records':
      layout.field(label, `records (${scope.recordIds.length}) 指定记录`);
      for (const id of scope.recordIds.slice(0, LIST_LIMIT)) layout.field('', id);
      if (scope.recordIds.length > LIST_LIMIT) layout.field('', moreText(scope.recordIds.length));
      return;
    case 'subject':
      layout.field(label, `data subject 数据主体, ${subjectName(scope)}`);
      return;
    case 'time_range': {
      const subject = scope.subjectPseudonym || scope.subjectFingerprint ? `, data subject ${subjectName(scope)}` : '';
      layout.field(label, `time range 时间范围 ${scope.from} to ${scope.to}${subject}`);
      return;
    }
    case 'fingerprint':
      layout.field(label, `content fingerprint 内容指纹 ${scope.fingerprint}`);
      return;
    case 'expired':
      layout.field(label, `records expired as of 截至该时间已过期的记录 ${scope.asOf}`);
      return;
    default: {
      const _exhaustive: never = scope;
      return _exhaustive;
    }
  }
}

/** A subject as the certificate names it: its former pseudonym, or (older certificates) a keyed fingerprint. */
function subjectName(scope: { subjectPseudonym?: string; subjectFingerprint?: string }): string {
  return scope.subjectPseudonym ? `pseudonym 假名 ${scope.subjectPseudonym}` : `fingerprint 指纹 ${scope.subjectFingerprint ?? ''}`;
}

function more(layout: PdfLayout, total: number): void {
  if (total > LIST_LIMIT) layout.paragraph(moreText(total), { size: 8 });
}

const abbreviate = (hex: string) => `${hex.slice(0, 24)}...`;
const moreText = (total: number) => `... and ${total - LIST_LIMIT} more 另有 ${total - LIST_LIMIT} 条`;
