import { createHash } from 'node:crypto';
import { MemoryKind, type ErasureCertificate, type ErasureReason, type SignedCertificate } from '@elma/domain';
import {
  BOTTOM,
  MARGIN,
  PAGE_HEIGHT,
  PAGE_WIDTH,
  PageStack,
  escapePdfString,
  num,
  streamObject,
  textWidth,
  truncateText,
  type1Font,
  wrapText,
  writePdf,
  type PdfFont,
} from '../pdf/writer';

/**
 * Renders a signed erasure certificate as a PDF for people who do not read
 * JSON (DPOs, auditors). The PDF is a view: the signed JSON stays the
 * authoritative document, which the last section says how to verify.
 *
 * Written by hand on purpose: PDF 1.4, the two standard Helvetica fonts
 * (no embedding), uncompressed content streams. Same input, same bytes.
 */
export function renderCertificatePdf(signed: SignedCertificate): Buffer {
  const layout = new Layout();
  writeCertificate(layout, signed);
  return assemblePdf(layout.finish(`ELMA erasure certificate - request ${signed.certificate.requestId}`));
}

/** Lists that grow with the closure are cut to this many rows. */
const LIST_LIMIT = 10;

const REASONS: Record<ErasureReason, string> = {
  subject_request: 'Data subject request',
  retention: 'Retention period ended',
  correction: 'Correction',
  legal: 'Legal obligation',
};

function writeCertificate(layout: Layout, { certificate: c, signature }: SignedCertificate): void {
  layout.title('ELMA erasure certificate');
  layout.paragraph(
    'A signed statement that the records below were erased, what the erasure covered and how it was checked. ' +
      'The signed JSON document is authoritative; this page renders it.',
  );

  writeRequest(layout, c);
  writeClosure(layout, c);
  writeSteps(layout, c);
  writeVerification(layout, c.verification);

  layout.heading('Audit anchor');
  layout.field('Sequence', String(c.auditAnchor.seq));
  layout.field('Hash', c.auditAnchor.hash);

  writeSignature(layout, signature);
}

function writeRequest(layout: Layout, c: ErasureCertificate): void {
  layout.heading('Request');
  layout.field('Tenant', c.tenant);
  layout.field('Request id', c.requestId);
  layout.field('Reason', `${REASONS[c.request.reason]} (${c.request.reason})`);
  layout.field('Requested by', c.request.requestedBy);
  layout.field('Requested at', c.request.requestedAt);
  layout.field('Approved by', c.request.approvedBy ?? 'not required');
  layout.field('Approved at', c.request.approvedAt ?? 'not required');
  writeScope(layout, c.request.scope);
  layout.field('Issued at', c.issuedAt);
}

/** The closure's counts, then its records and the legal-hold exceptions, each list cut at LIST_LIMIT rows. */
function writeClosure(layout: Layout, c: ErasureCertificate): void {
  layout.heading('Closure');
  layout.field('Records erased', String(c.closure.size));
  layout.field('By kind', MemoryKind.options.map((kind) => `${kind} ${c.closure.byKind[kind] ?? 0}`).join(', '));
  layout.field('Events', String(c.closure.events));
  layout.field('Streams deleted', String(c.closure.streamsDeleted));
  layout.field('Keys shredded', String(c.closure.keysShredded));
  layout.field('Tombstones', String(c.closure.tombstones));
  layout.field('Legal-hold exceptions', String(c.legalHoldExceptions.length));
  if (c.closure.records.length > 0) {
    layout.gap(4);
    layout.table(
      [
        { header: 'Record', width: 230 },
        { header: 'Kind', width: 80 },
        { header: 'Content fingerprint', width: 173 },
      ],
      c.closure.records.slice(0, LIST_LIMIT).map((r) => [r.id, r.kind, abbreviate(r.contentFingerprint)]),
    );
    layout.more(c.closure.records.length);
  }
  if (c.legalHoldExceptions.length > 0) {
    layout.gap(4);
    layout.paragraph('Kept because of a legal hold:', Layout.tableHeight(1));
    layout.table(
      [
        { header: 'Record', width: 230 },
        { header: 'Legal holds', width: 253 },
      ],
      c.legalHoldExceptions.slice(0, LIST_LIMIT).map((e) => [e.recordId, e.holdIds.join(', ')]),
    );
    layout.more(c.legalHoldExceptions.length);
  }
}

function writeSteps(layout: Layout, c: ErasureCertificate): void {
  layout.heading('Steps', Layout.tableHeight(c.steps.length));
  layout.table(
    [
      { header: 'Step', width: 113 },
      { header: 'Started', width: 150 },
      { header: 'Finished', width: 150 },
      { header: 'Attempts', width: 70, align: 'right' },
    ],
    c.steps.map((s) => [s.step, s.startedAt, s.finishedAt, String(s.attempts)]),
  );
}

/** One row per probe, then what the byte scan covered and the result. */
function writeVerification(layout: Layout, v: ErasureCertificate['verification']): void {
  layout.heading('Verification', Layout.tableHeight(5) + 6 + Layout.fieldsHeight(4));
  layout.table(
    [
      { header: 'Probe', width: 183 },
      { header: 'Checked', width: 100, align: 'right' },
      { header: 'Failed', width: 100, align: 'right' },
      { header: 'Skipped', width: 100, align: 'right' },
    ],
    (
      [
        ['getById', 'Read by id', v.getById],
        ['bm25', 'Full-text search (BM25)', v.bm25],
        ['knn', 'Vector search (kNN)', v.knn],
        ['decrypt', 'Decrypt with shredded keys', v.decrypt],
        ['byteScan', 'Byte scan of data files', v.byteScan],
      ] as const
    ).map(([name, label, p]) => [`${label} (${name})`, String(p.checked), String(p.failed), String(p.skipped)]),
  );
  layout.gap(6);
  layout.field('Files scanned', String(v.byteScan.files));
  layout.field('Bytes scanned', String(v.byteScan.bytes));
  layout.field('Rounds', String(v.rounds));
  layout.field('Result', v.passed ? 'PASSED' : 'FAILED', 'bold');
}

function writeSignature(layout: Layout, signature: SignedCertificate['signature']): void {
  layout.heading('Signature', Layout.fieldsHeight(6));
  layout.field('Algorithm', signature.alg);
  layout.field('Key id', signature.kid);
  layout.field('Fingerprint', createHash('sha256').update(signature.value).digest('hex').slice(0, 32));
  layout.gap(4);
  layout.paragraph(
    'To verify, save the signed JSON certificate and run: elma verify-certificate <file> --jwks <url>, ' +
      "where <url> is the issuing ELMA's /.well-known/elma-keys.",
  );
}

/** A subject as the certificate names it: its former pseudonym, or (older certificates) a keyed fingerprint. */
function subjectName(scope: { subjectPseudonym?: string; subjectFingerprint?: string }): string {
  return scope.subjectPseudonym ? `pseudonym ${scope.subjectPseudonym}` : `fingerprint ${abbreviate(scope.subjectFingerprint ?? '')}`;
}

function writeScope(layout: Layout, scope: ErasureCertificate['request']['scope']): void {
  switch (scope.type) {
    case 'records':
      layout.field('Scope', `records (${scope.recordIds.length})`);
      for (const id of scope.recordIds.slice(0, LIST_LIMIT)) layout.field('', id);
      if (scope.recordIds.length > LIST_LIMIT) layout.field('', moreText(scope.recordIds.length));
      return;
    case 'subject':
      layout.field('Scope', `data subject, ${subjectName(scope)}`);
      return;
    case 'time_range': {
      const subject = scope.subjectPseudonym || scope.subjectFingerprint ? `, data subject ${subjectName(scope)}` : '';
      layout.field('Scope', `time range ${scope.from} to ${scope.to}${subject}`);
      return;
    }
    case 'fingerprint':
      layout.field('Scope', `content fingerprint ${abbreviate(scope.fingerprint)}`);
      return;
    case 'expired':
      layout.field('Scope', `records expired as of ${scope.asOf}`);
      return;
    default: {
      const _exhaustive: never = scope;
      return _exhaustive;
    }
  }
}

const abbreviate = (hex: string) => `${hex.slice(0, 16)}...`;
const moreText = (total: number) => `... and ${total - LIST_LIMIT} more`;

type Font = PdfFont;
const FONT_RESOURCE: Record<Font, string> = { regular: 'F1', bold: 'F2' };

interface Column {
  header: string;
  width: number;
  align?: 'left' | 'right';
}

const CONTENT_WIDTH = PAGE_WIDTH - 2 * MARGIN;
const LABEL_WIDTH = 130;
const BODY_SIZE = 9.5;
const TABLE_SIZE = 8.5;
const LEADING = 1.35;
const CELL_PADDING = 4;
const TABLE_ROW_HEIGHT = TABLE_SIZE * LEADING + 3;

/**
 * Places text top to bottom and starts a new page before anything would cross
 * the bottom margin. Long values wrap; table cells are cut with "..." so a
 * row keeps one line.
 */
class Layout extends PageStack {
  constructor() {
    super(textOp);
  }

  title(text: string): void {
    this.line(MARGIN, 'bold', 18, text, 18 * LEADING);
    this.gap(2);
  }

  /** `keepWithNext`: height of what follows that should start on the same page (at least two lines). */
  heading(text: string, keepWithNext = 2 * BODY_SIZE * LEADING): void {
    this.ensure(14 + 12 * LEADING + 4 + keepWithNext);
    this.gap(14);
    this.line(MARGIN, 'bold', 12, text, 12 * LEADING);
    this.rule(this.y + 3);
    this.gap(4);
  }

  paragraph(text: string, keepWithNext = 0): void {
    const lines = wrap(text, 'regular', BODY_SIZE, CONTENT_WIDTH);
    this.ensure(Layout.fieldsHeight(lines.length) + keepWithNext);
    for (const part of lines) this.line(MARGIN, 'regular', BODY_SIZE, part);
  }

  /** A label and its value; the value wraps in its own column. An empty label continues the previous field. */
  field(label: string, value: string, font: Font = 'regular'): void {
    const lines = wrap(value, font, BODY_SIZE, CONTENT_WIDTH - LABEL_WIDTH);
    this.ensure(BODY_SIZE * LEADING);
    if (label !== '') {
      this.text(MARGIN, this.y - BODY_SIZE, 'bold', BODY_SIZE, truncate(label, 'bold', BODY_SIZE, LABEL_WIDTH - 6));
    }
    for (const part of lines) this.line(MARGIN + LABEL_WIDTH, font, BODY_SIZE, part);
  }

  /** The tail of a list cut at LIST_LIMIT rows. */
  more(total: number): void {
    if (total > LIST_LIMIT) this.line(MARGIN + CELL_PADDING, 'regular', TABLE_SIZE, moreText(total));
  }

  static tableHeight(rows: number): number {
    return (rows + 1) * TABLE_ROW_HEIGHT;
  }

  static fieldsHeight(lines: number): number {
    return lines * BODY_SIZE * LEADING;
  }

  table(columns: Column[], rows: string[][]): void {
    const rowHeight = TABLE_ROW_HEIGHT;
    // A table that fits on a page is not split; a longer one does not leave its header alone.
    const whole = Layout.tableHeight(rows.length);
    this.ensure(whole <= PAGE_HEIGHT - MARGIN - BOTTOM ? whole : 2 * rowHeight);
    this.tableRow(
      columns,
      columns.map((c) => c.header),
      'bold',
      rowHeight,
    );
    for (const row of rows) {
      if (this.y - rowHeight < BOTTOM) {
        this.newPage();
        this.tableRow(
          columns,
          columns.map((c) => c.header),
          'bold',
          rowHeight,
        );
      }
      this.tableRow(columns, row, 'regular', rowHeight);
    }
  }

  gap(points: number): void {
    this.y -= points;
  }

  /** Adds "page i of n" footers and returns each page's content stream. */
  finish(footer: string): string[] {
    return this.pages.map((ops, i) => {
      const pageText = `page ${i + 1} of ${this.pages.length}`;
      const pageWidth = textWidth(pageText, 'regular', 8);
      const left = truncate(footer, 'regular', 8, CONTENT_WIDTH - pageWidth - 12);
      return [...ops, textOp(MARGIN, 30, 'regular', 8, left), textOp(PAGE_WIDTH - MARGIN - pageWidth, 30, 'regular', 8, pageText)].join(
        '\n',
      );
    });
  }

  private tableRow(columns: Column[], cells: string[], font: Font, height: number): void {
    const top = this.y;
    if (font === 'bold') this.ops.push(`0.92 g ${num(MARGIN)} ${num(top - height)} ${num(CONTENT_WIDTH)} ${num(height)} re f 0 g`);
    let x = MARGIN;
    const baseline = top - height + (height - TABLE_SIZE) / 2 + 1.5;
    columns.forEach((column, i) => {
      const text = truncate(cells[i] ?? '', font, TABLE_SIZE, column.width - 2 * CELL_PADDING);
      const left = column.align === 'right' ? x + column.width - CELL_PADDING - textWidth(text, font, TABLE_SIZE) : x + CELL_PADDING;
      this.text(left, baseline, font, TABLE_SIZE, text);
      x += column.width;
    });
    this.y = top - height;
    this.rule(this.y, 0.25);
  }

  private line(x: number, font: Font, size: number, text: string, height = size * LEADING): void {
    this.ensure(height);
    this.text(x, this.y - size, font, size, text);
    this.y -= height;
  }
}

function textOp(x: number, y: number, font: Font, size: number, text: string): string {
  return `BT /${FONT_RESOURCE[font]} ${num(size)} Tf ${num(x)} ${num(y)} Td (${escapePdfString(toWinAnsi(text))}) Tj ET`;
}

/**
 * Printable Latin-1 is WinAnsi at the same code points; everything else
 * (controls, C1, beyond U+00FF) becomes '?', which also keeps line breaks
 * and other control characters out of the content stream.
 */
function toWinAnsi(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    out += (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) ? char : '?';
  }
  return out;
}

const wrap = (text: string, font: Font, size: number, maxWidth: number) => wrapText(toWinAnsi(text), font, size, maxWidth);
const truncate = (text: string, font: Font, size: number, maxWidth: number) => truncateText(toWinAnsi(text), font, size, maxWidth);

/** Objects: 1 catalog, 2 page tree, 3-4 fonts, 5 info, then a page and its content stream per page. */
function assemblePdf(contents: string[]): Buffer {
  const pageObject = (i: number) => 6 + 2 * i;
  return writePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${contents.map((_, i) => `${pageObject(i)} 0 R`).join(' ')}] /Count ${contents.length} >>`,
    type1Font('Helvetica'),
    type1Font('Helvetica-Bold'),
    '<< /Title (ELMA erasure certificate) /Producer (ELMA) >>',
    ...contents.flatMap((content, i) => [
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE_WIDTH} ${PAGE_HEIGHT}] ` +
        `/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents ${pageObject(i) + 1} 0 R >>`,
      streamObject(content),
    ]),
  ]);
}
