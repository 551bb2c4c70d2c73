import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import PDFDocument from 'pdfkit';

/**
 * The documents ELMA renders for people (erasure certificates, subject-access exports), made with pdfkit:
 * PDF/A-3b (XMP metadata, an output intent, fonts embedded), A4, one font family embedded as a subset of
 * the glyphs used. The family is Noto Sans CJK SC (OFL), shipped by an npm package so `npm install` brings it:
 * it covers Latin, Latin-1 and every CJK Unified Ideograph, so Chinese and English set in the same line.
 * Each document keeps its own layout on top of `PdfLayout`.
 */

/** Resolved through the package's own entry point: its `exports` do not list the font files. */
const FONT_DIR = join(dirname(createRequire(import.meta.url).resolve('@embedpdf/fonts-sc')), '..', 'fonts');
export const FONT_FILES = {
  regular: join(FONT_DIR, 'NotoSansHans-Regular.otf'),
  bold: join(FONT_DIR, 'NotoSansHans-Bold.otf'),
} as const;
export type PdfFont = keyof typeof FONT_FILES;

let fontBytes: Record<PdfFont, Buffer> | undefined;
/** 8 MB each: read once per process. */
function fonts(): Record<PdfFont, Buffer> {
  fontBytes ??= { regular: readFileSync(FONT_FILES.regular), bold: readFileSync(FONT_FILES.bold) };
  return fontBytes;
}

export interface PdfMetadata {
  title: string;
  /** Who the document is from (the organisation, else ELMA). */
  author: string;
  subject: string;
  keywords: string;
  /** BCP 47 tag of the document's main language (the catalog's /Lang). */
  lang: string;
  /** The date of what the document states (not of the rendering), so the same input renders the same text. */
  createdAt: Date;
  /**
   * What made the page, stored in the Info dictionary as `ElmaLayout`: a verifier compares a page with its own
   * rendering of the same document only when it renders the same layout.
   */
  layout: string;
}

export interface PdfAttachment {
  name: string;
  mediaType: string;
  description: string;
  bytes: Buffer;
}

/** A4 in points and the margin on every side. */
const MARGIN = 56;
const FOOTER_Y = 841.89 - 34;
const GREY = '#555555';

export interface Column {
  header: string;
  width: number;
  align?: 'left' | 'right';
}

/**
 * Places text top to bottom; pdfkit wraps it (between words, and between characters in Chinese text and in
 * words wider than the line) and starts a new page where it runs past the bottom margin. Table cells keep one
 * line and are cut with "...".
 */
export class PdfLayout {
  readonly doc: PDFKit.PDFDocument;
  private readonly chunks: Buffer[] = [];
  private readonly ended: Promise<Buffer>;
  readonly contentWidth: number;

  constructor(
    private readonly meta: PdfMetadata,
    private readonly sizes: { body: number; table: number; label: number },
  ) {
    this.doc = new PDFDocument({
      size: 'A4',
      margin: MARGIN,
      pdfVersion: '1.7',
      subset: 'PDF/A-3b',
      lang: meta.lang,
      displayTitle: true,
      bufferPages: true,
      info: {
        Title: meta.title,
        Author: meta.author,
        Subject: meta.subject,
        Keywords: meta.keywords,
        Creator: 'ELMA',
        Producer: 'ELMA (pdfkit)',
        CreationDate: meta.createdAt,
        ModDate: meta.createdAt,
      },
    });
    // pdfkit writes every key of `info` into the Info dictionary; the typings know only the standard ones.
    (this.doc.info as Record<string, unknown>).ElmaLayout = meta.layout;
    this.ended = new Promise((resolve, reject) => {
      this.doc.on('data', (chunk: Buffer) => this.chunks.push(chunk));
      this.doc.on('end', () => resolve(Buffer.concat(this.chunks)));
      this.doc.on('error', reject);
    });
    const { regular, bold } = fonts();
    this.doc.registerFont('regular', regular);
    this.doc.registerFont('bold', bold);
    this.doc.font('regular').fontSize(sizes.body);
    this.contentWidth = this.doc.page.width - 2 * MARGIN;
  }

  private get bottom(): number {
    return this.doc.page.height - MARGIN;
  }

  /** Starts a new page unless `height` more points fit on this one (what is taller than a page is split instead). */
  ensure(height: number): void {
    if (this.doc.y + height > this.bottom && this.doc.y > MARGIN + 1) this.doc.addPage();
  }

  gap(points: number): void {
    this.doc.y += points;
  }

  title(text: string, subtitle?: string): void {
    this.doc.font('bold').fontSize(18).fillColor('black').text(clean(text), MARGIN, this.doc.y, { width: this.contentWidth });
    if (subtitle) this.doc.font('regular').fontSize(11).fillColor(GREY).text(clean(subtitle), { width: this.contentWidth });
    this.doc.fillColor('black');
    this.gap(4);
  }

  /** `keepWithNext`: height of what follows that should start on the same page. */
  heading(text: string, keepWithNext = 2 * this.lineHeight(this.sizes.body)): void {
    this.ensure(14 + 20 + keepWithNext);
    this.gap(12);
    this.doc.font('bold').fontSize(12).fillColor('black').text(clean(text), MARGIN, this.doc.y, { width: this.contentWidth });
    const y = this.doc.y + 1;
    this.doc
      .moveTo(MARGIN, y)
      .lineTo(MARGIN + this.contentWidth, y)
      .lineWidth(0.5)
      .strokeColor('#999999')
      .stroke();
    this.gap(5);
  }

  paragraph(text: string, options: { size?: number; grey?: boolean; font?: PdfFont } = {}): void {
    const size = options.size ?? this.sizes.body;
    const value = clean(text);
    this.doc.font(options.font ?? 'regular').fontSize(size);
    this.ensure(Math.min(this.doc.heightOfString(value, { width: this.contentWidth }), 3 * this.lineHeight(size)));
    this.doc
      .fillColor(options.grey ? GREY : 'black')
      .text(value, MARGIN, this.doc.y, { width: this.contentWidth })
      .fillColor('black');
    this.gap(2);
  }

  /** A label and its value; the value wraps in its own column. An empty label continues the previous field. */
  field(label: string, value: string, options: { font?: PdfFont; labelWidth?: number } = {}): void {
    const labelWidth = options.labelWidth ?? 140;
    const width = this.contentWidth - labelWidth;
    const text = clean(value);
    this.doc.font(options.font ?? 'regular').fontSize(this.sizes.body);
    const height = this.doc.heightOfString(text, { width });
    this.ensure(Math.min(height, 3 * this.lineHeight(this.sizes.body)));
    const top = this.doc.y;
    if (label !== '') {
      this.doc
        .font('bold')
        .fontSize(this.sizes.label)
        .text(this.fit(clean(label), labelWidth - 6), MARGIN, top + (this.sizes.body - this.sizes.label) / 2, { lineBreak: false });
    }
    this.doc
      .font(options.font ?? 'regular')
      .fontSize(this.sizes.body)
      .text(text, MARGIN + labelWidth, top, { width });
    this.doc.x = MARGIN;
  }

  /** One row per item; a table that fits on a page is not split, a longer one repeats its header on each page. */
  table(columns: Column[], rows: string[][]): void {
    const rowHeight = this.lineHeight(this.sizes.table) + 4;
    const whole = (rows.length + 1) * rowHeight;
    this.ensure(whole <= this.bottom - MARGIN ? whole : 2 * rowHeight);
    this.row(
      columns,
      columns.map((c) => c.header),
      'bold',
      rowHeight,
    );
    for (const row of rows) {
      if (this.doc.y + rowHeight > this.bottom) {
        this.doc.addPage();
        this.row(
          columns,
          columns.map((c) => c.header),
          'bold',
          rowHeight,
        );
      }
      this.row(columns, row, 'regular', rowHeight);
    }
    this.gap(2);
  }

  tableHeight(rows: number): number {
    return (rows + 1) * (this.lineHeight(this.sizes.table) + 4);
  }

  fieldsHeight(lines: number): number {
    return lines * this.lineHeight(this.sizes.body);
  }

  /**
   * Footers ("footer · page i of n"), the attachments, and the file. The attachments are PDF/A-3 associated
   * files (relationship Source: the document this page renders).
   */
  async finish(footer: string, attachments: PdfAttachment[] = []): Promise<Buffer> {
    const range = this.doc.bufferedPageRange();
    for (let i = 0; i < range.count; i++) {
      this.doc.switchToPage(range.start + i);
      const pageText = `page ${i + 1} of ${range.count}`;
      this.doc.font('regular').fontSize(8).fillColor(GREY);
      const pageWidth = this.doc.widthOfString(pageText);
      // Below the bottom margin: pdfkit would start a new page for text placed there, so margins are lifted.
      const margins = this.doc.page.margins;
      this.doc.page.margins = { ...margins, bottom: 0 };
      this.doc.text(this.fit(clean(footer), this.contentWidth - pageWidth - 12), MARGIN, FOOTER_Y, { lineBreak: false });
      this.doc.text(pageText, MARGIN + this.contentWidth - pageWidth, FOOTER_Y, { lineBreak: false });
      this.doc.page.margins = margins;
    }
    for (const file of attachments) {
      // `relationship` (the PDF/A-3 /AFRelationship) is written by pdfkit but missing from its typings.
      const options: PDFKit.Mixins.PDFAttachmentOptions & { relationship: string } = {
        name: file.name,
        type: file.mediaType,
        description: file.description,
        relationship: 'Source',
        creationDate: this.meta.createdAt,
        modifiedDate: this.meta.createdAt,
      };
      this.doc.file(file.bytes, options);
    }
    this.doc.end();
    return this.ended;
  }

  private row(columns: Column[], cells: string[], font: PdfFont, height: number): void {
    const top = this.doc.y;
    if (font === 'bold') this.doc.rect(MARGIN, top, this.contentWidth, height).fill('#ebebeb').fillColor('black');
    this.doc.font(font).fontSize(this.sizes.table);
    let x = MARGIN;
    columns.forEach((column, i) => {
      const text = this.fit(clean(cells[i] ?? ''), column.width - 8);
      const left = column.align === 'right' ? x + column.width - 4 - this.doc.widthOfString(text) : x + 4;
      this.doc.text(text, left, top + 2, { lineBreak: false });
      x += column.width;
    });
    this.doc
      .moveTo(MARGIN, top + height)
      .lineTo(MARGIN + this.contentWidth, top + height)
      .lineWidth(0.25)
      .strokeColor('#999999')
      .stroke();
    this.doc.x = MARGIN;
    this.doc.y = top + height;
  }

  /** `text` in the current font, cut with "..." to fit in `width`. */
  private fit(text: string, width: number): string {
    if (this.doc.widthOfString(text) <= width) return text;
    const chars = [...text];
    let low = 0;
    let high = chars.length;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (this.doc.widthOfString(`${chars.slice(0, mid).join('')}...`) <= width) low = mid;
      else high = mid - 1;
    }
    return `${chars.slice(0, low).join('')}...`;
  }

  /** What pdfkit advances per line: Noto Sans CJK's ascender plus descender is 1.448 em. */
  private lineHeight(size: number): number {
    return size * 1.45;
  }
}

/** C0 and C1 control characters and the Unicode line and paragraph separators. */
const isControl = (code: number) => code < 0x20 || (code >= 0x7f && code < 0xa0) || code === 0x2028 || code === 0x2029;

/** Control characters (line breaks included) become spaces: a value never moves the layout or hides text. */
function clean(text: string): string {
  let out = '';
  for (const char of text) out += isControl(char.codePointAt(0)!) ? ' ' : char;
  return out;
}
