import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

/** What ELMA reads back from a PDF: the text of each page, the attached files, the Info dictionary and the XMP. */
export interface ReadPdf {
  /** Each page's text as a reader extracts it (Unicode, through the embedded fonts' ToUnicode maps). */
  pages: string[];
  /** Attached files (PDF/A-3 associated files, the EmbeddedFiles name tree) by file name. */
  attachments: Map<string, Buffer>;
  /** The Info dictionary; keys outside the standard set are under `Custom`. */
  info: Record<string, unknown>;
  /** The XMP metadata as flattened properties (`dc:title`, `pdfaid:part`, ...); empty without XMP. */
  xmp: Map<string, unknown>;
  /** The catalog's document language (/Lang), if any. */
  lang: string | undefined;
}

/** The PDF could not be read at all (not a PDF, truncated, encrypted). The message names no content. */
export class PdfUnreadable extends Error {
  constructor(reason: string) {
    super(`not a readable PDF: ${reason}`);
  }
}

/**
 * Reads a PDF with Mozilla's pdf.js (no rendering, no fonts loaded into the process, no code run from the
 * file: `isEvalSupported: false`). Throws `PdfUnreadable` for anything pdf.js cannot open.
 */
export async function readPdf(bytes: Uint8Array): Promise<ReadPdf> {
  // pdf.js takes ownership of the buffer it is given: a copy leaves the caller's bytes alone.
  const task = getDocument({
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    verbosity: 0,
  });
  let doc;
  try {
    doc = await task.promise;
  } catch (error) {
    await task.destroy();
    throw new PdfUnreadable(error instanceof Error ? error.name : 'unknown error');
  }
  try {
    const pages: string[] = [];
    for (let i = 1; i <= doc.numPages; i++) {
      const content = await (await doc.getPage(i)).getTextContent();
      pages.push(content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join(''));
    }
    const attachments = new Map<string, Buffer>();
    const attached = ((await doc.getAttachments()) ?? {}) as Record<string, { filename: string; content: Uint8Array }>;
    for (const file of Object.values(attached)) attachments.set(file.filename, Buffer.from(file.content));
    const { info, metadata } = await doc.getMetadata();
    const xmp = new Map<string, unknown>(metadata ? [...(metadata as unknown as Iterable<[string, unknown]>)] : []);
    const infoRecord = info as Record<string, unknown>;
    return { pages, attachments, info: infoRecord, xmp, lang: typeof infoRecord.Language === 'string' ? infoRecord.Language : undefined };
  } catch (error) {
    throw new PdfUnreadable(error instanceof Error ? error.name : 'unknown error');
  } finally {
    await doc.destroy();
  }
}
