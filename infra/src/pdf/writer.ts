/**
 * The low-level PDF 1.4 writer shared by the hand-written documents (the
 * erasure certificate in infra/src/certificate/pdf.ts and the subject-access
 * export in infra/src/subject-access/pdf.ts): numbers, string escaping, the
 * Helvetica metrics, line breaking, and the file itself (objects, xref,
 * trailer). Each document keeps its own layout and font set. Uncompressed and
 * deterministic: same input, same bytes.
 */

/** The two standard Helvetica faces every document uses (resources /F1 and /F2). */
export type PdfFont = 'regular' | 'bold';

/** A4 in points. */
export const PAGE_WIDTH = 595.28;
export const PAGE_HEIGHT = 841.89;

/** A number as content streams write it: at most two decimals. */
export const num = (n: number) => String(Math.round(n * 100) / 100);

export function escapePdfString(text: string): string {
  return text.replace(/[\\()]/g, (c) => `\\${c}`);
}

/** A standard Type 1 font in WinAnsi encoding. */
export const type1Font = (name: string) => `<< /Type /Font /Subtype /Type1 /BaseFont /${name} /Encoding /WinAnsiEncoding >>`;

/** A stream object's body; `content` holds only characters below U+0100, so its length is its byte length. */
export const streamObject = (content: string) => `<< /Length ${content.length} >>\nstream\n${content}\nendstream`;

/**
 * The file: header, objects numbered from 1 in the order given, xref and
 * trailer (object 1 is the catalog, object 5 the info dictionary). Every
 * character is below U+0100, so string length is byte length and xref
 * offsets can be counted on the string.
 */
export function writePdf(objects: string[]): Buffer {
  // The comment of high bytes after the header tells transfer tools the file is binary.
  let pdf = '%PDF-1.4\n%\u00e2\u00e3\u00cf\u00d3\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 5 0 R >>\nstartxref\n${xref}\n%%EOF`;
  return Buffer.from(pdf, 'latin1');
}

/** The margin on every side of a page. */
export const MARGIN = 56;
/** Where a page's content ends: the bottom margin. */
export const BOTTOM = MARGIN;

/**
 * Pages of content-stream operators filled top to bottom from `y`: the
 * machinery under each document's layout, which sets its own text with `textOp`.
 */
export abstract class PageStack {
  protected readonly pages: string[][] = [];
  protected y = 0;

  constructor(private readonly textOp: (x: number, y: number, font: PdfFont, size: number, text: string) => string) {
    this.newPage();
  }

  protected text(x: number, y: number, font: PdfFont, size: number, text: string): void {
    this.ops.push(this.textOp(x, y, font, size, text));
  }

  protected rule(y: number, width = 0.5): void {
    this.ops.push(`${num(width)} w ${num(MARGIN)} ${num(y)} m ${num(PAGE_WIDTH - MARGIN)} ${num(y)} l S`);
  }

  protected ensure(height: number): void {
    // On an empty page a new one would not help: what is too tall is split instead.
    if (this.y - height < BOTTOM && this.ops.length > 0) this.newPage();
  }

  protected newPage(): void {
    this.pages.push([]);
    this.y = PAGE_HEIGHT - MARGIN;
  }

  protected get ops(): string[] {
    return this.pages[this.pages.length - 1];
  }
}

/**
 * Words of already sanitised `text` wrapped at spaces to `maxWidth`; a word
 * wider than the line (an id, a hash, a Chinese sentence, which has no
 * spaces) is broken between characters.
 */
export function wrapText(text: string, font: PdfFont, size: number, maxWidth: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ')) {
    const candidate = current === '' ? word : `${current} ${word}`;
    if (textWidth(candidate, font, size) <= maxWidth) {
      current = candidate;
      continue;
    }
    if (current !== '') lines.push(current);
    const pieces = splitToWidth(word, font, size, maxWidth);
    lines.push(...pieces.slice(0, -1));
    current = pieces[pieces.length - 1];
  }
  lines.push(current);
  return lines;
}

/** Already sanitised `text`, cut with "..." to fit in `maxWidth`. */
export function truncateText(text: string, font: PdfFont, size: number, maxWidth: number): string {
  if (textWidth(text, font, size) <= maxWidth) return text;
  return `${splitToWidth(text, font, size, maxWidth - textWidth('...', font, size))[0]}...`;
}

/** Consecutive pieces of `text`, each as long as fits in `maxWidth` (at least one character). */
function splitToWidth(text: string, font: PdfFont, size: number, maxWidth: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  let width = 0;
  for (const char of text) {
    const advance = textWidth(char, font, size);
    if (piece !== '' && width + advance > maxWidth) {
      pieces.push(piece);
      piece = '';
      width = 0;
    }
    piece += char;
    width += advance;
  }
  pieces.push(piece);
  return pieces;
}

// Advance widths (1/1000 em) of U+0020..U+007E from the Adobe core-font AFMs.
// prettier-ignore
const HELVETICA = [
  278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
  556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
  1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
  667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
  333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
  556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
// prettier-ignore
const HELVETICA_BOLD = [
  278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278,
  556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611,
  975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778,
  667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556,
  333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611,
  611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];
/** Latin-1 beyond ASCII (an upper bound, so wrapping errs on the short side) and every CJK glyph, one em wide. */
const WIDEST = 1000;

/** Width in points of `text` set in Helvetica (or bold) at `size`. */
export function textWidth(text: string, font: PdfFont, size: number): number {
  const widths = font === 'bold' ? HELVETICA_BOLD : HELVETICA;
  let total = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    total += code >= 0x20 && code <= 0x7e ? widths[code - 0x20] : WIDEST;
  }
  return (total * size) / 1000;
}
