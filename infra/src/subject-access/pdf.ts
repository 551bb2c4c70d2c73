import { MemoryKind, type ExportedRecord, type SubjectExport } from '@elma/domain';
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
 * Renders a subject-access export as a PDF a data subject can read. The JSON
 * export stays the authoritative, portable document; this is its view.
 *
 * Written by hand like the erasure certificate (infra/src/certificate/pdf.ts):
 * PDF 1.4, uncompressed, same input same bytes. Latin text is set in the
 * standard Helvetica fonts; every other character (Chinese first of all) in
 * the standard CJK font STSong-Light through the predefined Unicode CMap
 * UniGB-UTF16-H, which conforming readers supply themselves (Acrobat, pdf.js,
 * poppler, MuPDF), so no font is embedded and the file stays small.
 */
export function renderSubjectExportPdf(data: SubjectExport): Buffer {
  const layout = new Layout();
  writeExport(layout, data);
  return assemblePdf(layout.finish(`ELMA subject access export - request ${data.requestId}`));
}

function writeExport(layout: Layout, x: SubjectExport): void {
  layout.title('ELMA subject access export');
  layout.paragraph(
    'Everything this ELMA holds about the data subject below (GDPR Art. 15): each record with its content, provenance, ' +
      'lineage, purposes, retention, sensitivity and legal-hold marks, and the processing history from the audit trail. ' +
      'The JSON export (export.json) is the machine-readable, portable copy (Art. 20); the signed manifest states the ' +
      'sha256 of both files.',
  );
  layout.heading('Request');
  layout.field('Tenant', x.tenant);
  layout.field('Request id', x.requestId);
  layout.field('Data subject', x.subject);
  layout.field('Pseudonym', x.subjectPseudonym);
  layout.field('Produced at', x.producedAt);
  layout.field('Available until', x.expiresAt);
  layout.field('Format', `${x.format} version ${x.formatVersion}`);

  layout.heading('Summary');
  layout.field('Records', String(x.counts.records));
  layout.field('Source events', String(x.counts.events));
  layout.field('By kind', MemoryKind.options.map((kind) => `${kind} ${x.counts.byKind[kind] ?? 0}`).join(', '));
  layout.field('Restricted', String(x.counts.restricted));
  layout.field('Under legal hold', String(x.counts.held));
  layout.field('Shared with others', String(x.counts.withheld));
  layout.field('Processing entries', String(x.counts.processing));

  layout.heading('Records');
  if (x.records.length === 0) layout.paragraph('No record of this data subject is held.');
  for (const record of x.records) writeRecord(layout, record);

  if (x.withheld.length > 0) {
    layout.heading('Records shared with other data subjects');
    layout.paragraph(
      'These records were derived from your records together with records of other people. Their content is not ' +
        'shown, as it would disclose the others; each is listed with the records of yours it draws on.',
    );
    for (const w of x.withheld) {
      layout.gap(4);
      layout.field('Record', w.id, 'bold');
      layout.field('Kind, status', `${w.kind}, ${w.status}`);
      layout.field('Recorded at', w.recordedAt);
      layout.field('From your records', w.fromRecordIds.join(', ') || 'none');
      layout.field('Other sources', `${w.otherSources} (of other data subjects)`);
      layout.field('Marks', marksText(w.marks));
    }
  }

  if (x.events.length > 0) {
    layout.heading('Where the data came from', Layout.tableHeight(Math.min(3, x.events.length)));
    layout.table(
      [
        { header: 'Occurred at', width: 118 },
        { header: 'Activity', width: 70 },
        { header: 'Source', width: 100 },
        { header: 'Sent by', width: 70 },
        { header: 'Record', width: 125 },
      ],
      x.events.map((e) => [e.occurredAt, e.activity, [e.source.system, e.source.channel].filter(Boolean).join(' / '), e.actor, e.recordId]),
    );
  }

  layout.heading('Processing history', Layout.tableHeight(Math.min(3, x.processing.length)));
  if (x.processing.length === 0) layout.paragraph('No recorded processing.');
  else
    layout.table(
      [
        { header: 'Time', width: 118 },
        { header: 'Actor', width: 90 },
        { header: 'Operation', width: 60 },
        { header: 'Decision', width: 95 },
        { header: 'Records, events', width: 120 },
      ],
      x.processing.map((p) => [
        p.time,
        p.actor,
        p.operation,
        `${p.effect} ${p.rule}`,
        [...p.operations, ...p.recordIds, ...p.eventIds].join(', '),
      ]),
    );
}

function writeRecord(layout: Layout, r: ExportedRecord): void {
  layout.gap(6);
  layout.field('Record', r.id, 'bold');
  layout.field('Kind, status', `${r.kind}, ${r.status}, version ${r.version}`);
  layout.field('Content', r.content.text);
  if (r.content.fact) layout.field('Fact', `${r.content.fact.entity} / ${r.content.fact.attribute}: ${r.content.fact.value}`);
  if (r.content.procedure)
    layout.field('Procedure', `${r.content.procedure.name} v${r.content.procedure.version}: ${r.content.procedure.steps.join(' / ')}`);
  if (r.content.relation) {
    const { from, relation, to } = r.content.relation;
    layout.field('Relation', `${from.type}:${from.id} ${relation} ${to.type}:${to.id}`);
  }
  layout.field('Valid', `${r.validFrom} to ${r.validTo ?? 'open'}`);
  layout.field('Recorded at', r.recordedAt + (r.revisedAt ? `, revised ${r.revisedAt}` : ''));
  layout.field('Provenance', `${r.provenance.rule} ${r.provenance.ruleVersion}, source ${r.sourceTrust}, confidence ${r.confidence}`);
  if (r.provenance.sourceEventIds.length > 0) layout.field('Source events', r.provenance.sourceEventIds.join(', '));
  if (r.provenance.parentIds.length > 0) layout.field('Derived from', r.provenance.parentIds.join(', '));
  if (r.derivedRecordIds.length > 0) layout.field('Used by', r.derivedRecordIds.join(', '));
  layout.field('Purposes', r.purposes.join(', '));
  layout.field('Sensitivity', r.sensitivity);
  layout.field('Retention', `${r.retention.class}, ${r.retention.expiresAt ? `until ${r.retention.expiresAt}` : 'no end date'}`);
  layout.field('Marks', marksText(r.marks));
}

function marksText(marks: ExportedRecord['marks']): string {
  const parts = [
    ...(marks.restricted ? ['restricted'] : []),
    ...(marks.legalHolds.length > 0 ? [`legal hold ${marks.legalHolds.join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join('; ') : 'none';
}

type Font = PdfFont;
const FONT_RESOURCE: Record<Font | 'cjk', string> = { regular: 'F1', bold: 'F2', cjk: 'F3' };

interface Column {
  header: string;
  width: number;
}

const CONTENT_WIDTH = PAGE_WIDTH - 2 * MARGIN;
const LABEL_WIDTH = 110;
const BODY_SIZE = 9.5;
const TABLE_SIZE = 7.5;
const LEADING = 1.4;
const CELL_PADDING = 3;
const TABLE_ROW_HEIGHT = TABLE_SIZE * LEADING + 3;

/** Places text top to bottom, starting a new page before the bottom margin; values wrap, table cells are cut with "...". */
class Layout extends PageStack {
  constructor() {
    super(textOp);
  }

  title(text: string): void {
    this.line(MARGIN, 'bold', 18, text, 18 * LEADING);
    this.gap(2);
  }

  heading(text: string, keepWithNext = 2 * BODY_SIZE * LEADING): void {
    this.ensure(14 + 12 * LEADING + 4 + keepWithNext);
    this.gap(14);
    this.line(MARGIN, 'bold', 12, text, 12 * LEADING);
    this.rule(this.y + 3);
    this.gap(4);
  }

  paragraph(text: string): void {
    for (const part of wrap(text, 'regular', BODY_SIZE, CONTENT_WIDTH)) this.line(MARGIN, 'regular', BODY_SIZE, part);
  }

  field(label: string, value: string, font: Font = 'regular'): void {
    const lines = wrap(value, font, BODY_SIZE, CONTENT_WIDTH - LABEL_WIDTH);
    this.ensure(BODY_SIZE * LEADING);
    this.text(MARGIN, this.y - BODY_SIZE, 'bold', BODY_SIZE, truncate(label, 'bold', BODY_SIZE, LABEL_WIDTH - 6));
    for (const part of lines) this.line(MARGIN + LABEL_WIDTH, font, BODY_SIZE, part);
  }

  static tableHeight(rows: number): number {
    return (rows + 1) * TABLE_ROW_HEIGHT;
  }

  table(columns: Column[], rows: string[][]): void {
    const header = columns.map((c) => c.header);
    this.ensure(2 * TABLE_ROW_HEIGHT);
    this.tableRow(columns, header, 'bold');
    for (const row of rows) {
      if (this.y - TABLE_ROW_HEIGHT < BOTTOM) {
        this.newPage();
        this.tableRow(columns, header, 'bold');
      }
      this.tableRow(columns, row, 'regular');
    }
  }

  gap(points: number): void {
    this.y -= points;
  }

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

  private tableRow(columns: Column[], cells: string[], font: Font): void {
    const top = this.y;
    const height = TABLE_ROW_HEIGHT;
    if (font === 'bold') this.ops.push(`0.92 g ${num(MARGIN)} ${num(top - height)} ${num(CONTENT_WIDTH)} ${num(height)} re f 0 g`);
    let x = MARGIN;
    const baseline = top - height + (height - TABLE_SIZE) / 2 + 1.5;
    columns.forEach((column, i) => {
      this.text(x + CELL_PADDING, baseline, font, TABLE_SIZE, truncate(cells[i] ?? '', font, TABLE_SIZE, column.width - 2 * CELL_PADDING));
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

/** Printable Latin-1 goes to Helvetica (WinAnsi, same code points); controls are dropped. */
const isLatin = (code: number) => (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff);
const isControl = (code: number) => code < 0x20 || (code >= 0x7f && code < 0xa0) || (code >= 0x2028 && code <= 0x2029);

/** Runs of one font each: Latin-1 in Helvetica (regular or bold), everything else in the CJK font. */
function runs(text: string, font: Font): { font: Font | 'cjk'; text: string }[] {
  const out: { font: Font | 'cjk'; text: string }[] = [];
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (isControl(code)) continue;
    const f = isLatin(code) ? font : 'cjk';
    const last = out[out.length - 1];
    if (last && last.font === f) last.text += char;
    else out.push({ font: f, text: char });
  }
  return out;
}

/** One text object; successive runs continue where the previous one ended. */
function textOp(x: number, y: number, font: Font, size: number, text: string): string {
  const shown = runs(text, font)
    .map(
      (run) =>
        `/${FONT_RESOURCE[run.font]} ${num(size)} Tf ${run.font === 'cjk' ? utf16Hex(run.text) : `(${escapePdfString(run.text)})`} Tj`,
    )
    .join(' ');
  return `BT /${FONT_RESOURCE[font]} ${num(size)} Tf ${num(x)} ${num(y)} Td ${shown} ET`;
}

/** A hex string of UTF-16BE code units, what the UniGB-UTF16-H CMap reads. */
function utf16Hex(text: string): string {
  let hex = '';
  for (let i = 0; i < text.length; i++) hex += text.charCodeAt(i).toString(16).padStart(4, '0').toUpperCase();
  return `<${hex}>`;
}

function stripControls(text: string): string {
  let out = '';
  for (const char of text) out += isControl(char.codePointAt(0)!) ? ' ' : char;
  return out;
}

/** Words wrap at spaces; a word wider than the line (an id, a Chinese sentence, which has no spaces) breaks between characters. */
const wrap = (text: string, font: Font, size: number, maxWidth: number) => wrapText(stripControls(text), font, size, maxWidth);
const truncate = (text: string, font: Font, size: number, maxWidth: number) => truncateText(stripControls(text), font, size, maxWidth);

/**
 * Objects: 1 catalog, 2 page tree, 3-4 Helvetica, 5 info, 6 the CJK font
 * (Type0), 7 its CIDFont, 8 its descriptor, then a page and its content
 * stream per page. Content streams are ASCII (CJK text is hex) plus Latin-1.
 */
function assemblePdf(contents: string[]): Buffer {
  const pageObject = (i: number) => 9 + 2 * i;
  return writePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${contents.map((_, i) => `${pageObject(i)} 0 R`).join(' ')}] /Count ${contents.length} >>`,
    type1Font('Helvetica'),
    type1Font('Helvetica-Bold'),
    '<< /Title (ELMA subject access export) /Producer (ELMA) >>',
    '<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UTF16-H /DescendantFonts [7 0 R] >>',
    '<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light ' +
      '/CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 4 >> /FontDescriptor 8 0 R /DW 1000 >>',
    '<< /Type /FontDescriptor /FontName /STSong-Light /Flags 6 /FontBBox [-25 -254 1000 880] /ItalicAngle 0 ' +
      '/Ascent 880 /Descent -120 /CapHeight 880 /StemV 93 >>',
    ...contents.flatMap((content, i) => [
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE_WIDTH} ${PAGE_HEIGHT}] ` +
        `/Resources << /Font << /F1 3 0 R /F2 4 0 R /F3 6 0 R >> >> /Contents ${pageObject(i) + 1} 0 R >>`,
      streamObject(content),
    ]),
  ]);
}
