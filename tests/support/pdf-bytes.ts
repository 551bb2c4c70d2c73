import { inflateSync } from 'node:zlib';

/**
 * A PDF's bytes as a search sees them when nothing may hide: the file itself followed by every stream inflated
 * (content streams, fonts, attachments and XMP are Flate-compressed, so a plain byte search would miss them).
 * `inflated` counts the streams that inflated: a search that inflated none proves nothing.
 */
export function pdfBytesInflated(pdf: Buffer): { bytes: Buffer; inflated: number } {
  const parts: Buffer[] = [pdf];
  let at = 0;
  for (;;) {
    const start = pdf.indexOf('stream\n', at);
    const end = start < 0 ? -1 : pdf.indexOf('\nendstream', start);
    if (end < 0) break;
    try {
      parts.push(inflateSync(pdf.subarray(start + 'stream\n'.length, end)));
    } catch {
      // Not Flate: its raw bytes are searched already.
    }
    at = end + '\nendstream'.length;
  }
  return { bytes: Buffer.concat(parts), inflated: parts.length - 1 };
}
