import { describe, expect, it } from 'vitest';
import { SubjectExport, type ExportedRecord } from '@elma/domain';
import { renderSubjectExportPdf } from './pdf';

const utf16Hex = (text: string) => [...text].map((c) => c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()).join('');

function record(id: string, text: string, extra: Partial<ExportedRecord> = {}): ExportedRecord {
  return {
    id,
    kind: 'episodic',
    status: 'active',
    version: 1,
    content: { text },
    validFrom: '2026-11-25T09:30:00Z',
    validTo: null,
    recordedAt: '2026-11-25T09:30:01Z',
    provenance: { sourceEventIds: ['e1'], parentIds: [], rule: 'ingest.extract', ruleVersion: '1' },
    derivedRecordIds: [],
    purposes: ['support'],
    sensitivity: 'internal',
    owner: 'cust-wang',
    retention: { class: 'standard', expiresAt: null },
    confidence: 1,
    sourceTrust: 'user',
    tainted: false,
    usage: { retrieved: 0, adopted: 0, lastUsedAt: null },
    marks: { restricted: false, legalHolds: [] },
    ...extra,
  };
}

function anExport(records: ExportedRecord[]): SubjectExport {
  return SubjectExport.parse({
    format: 'elma.subject-export',
    formatVersion: 1,
    tenant: 'acme',
    requestId: 'sar_1',
    subject: 'cust-wang',
    subjectPseudonym: `psn_${'b'.repeat(32)}`,
    producedAt: '2026-12-01T00:00:00.000Z',
    expiresAt: '2026-12-08T00:00:00.000Z',
    counts: {
      records: records.length,
      events: 0,
      byKind: { episodic: records.length },
      restricted: 0,
      held: 0,
      withheld: 0,
      processing: 0,
    },
    records,
    events: [],
    withheld: [],
    processing: [],
  });
}

/** Each xref entry points at its object, as a reader resolves it. */
function expectValidXref(pdf: string): number {
  const startxref = Number(/startxref\n(\d+)\n%%EOF$/.exec(pdf)![1]);
  const [, , count] = /^xref\n(\d+) (\d+)\n/.exec(pdf.slice(startxref))!.map(Number);
  const entriesAt = startxref + `xref\n0 ${count}\n`.length;
  for (let i = 1; i < count; i++) {
    const offset = Number(pdf.slice(entriesAt + 20 * i, entriesAt + 20 * i + 10));
    expect(pdf.slice(offset, offset + `${i} 0 obj`.length)).toBe(`${i} 0 obj`);
  }
  return count - 1;
}

describe('the subject-access export PDF', () => {
  const zh = '王先生说交付风险很高，希望下周确认发货日期。';

  it('sets Chinese text in the standard CJK font as UTF-16 and Latin text in Helvetica, in one line', () => {
    const pdf = renderSubjectExportPdf(anExport([record('mem_1', `Mr Wang: ${zh}`)])).toString('latin1');
    expect(pdf).toContain('/Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UTF16-H');
    expect(pdf).toContain('/Registry (Adobe) /Ordering (GB1)');
    expect(pdf).toMatch(new RegExp(`\\(Mr Wang: \\) Tj /F3 [\\d.]+ Tf <${utf16Hex(zh)}> Tj`));
    // Nothing is turned into '?' any more.
    expect(pdf).not.toContain('(?');
    expectValidXref(pdf);
  });

  it('wraps a long Chinese paragraph (no spaces) between characters and keeps every character', () => {
    const long = zh.repeat(12);
    const pdf = renderSubjectExportPdf(anExport([record('mem_1', long)])).toString('latin1');
    const shown = [...pdf.matchAll(/\/F3 [\d.]+ Tf <([0-9A-F]+)> Tj/g)].map((m) => m[1]);
    expect(shown.length).toBeGreaterThan(3);
    expect(shown.join('')).toBe(utf16Hex(long));
  });

  it('drops control characters and keeps the structure valid over many pages; same input, same bytes', () => {
    const records = Array.from({ length: 40 }, (_, i) => record(`mem_${i}`, `line (${i})\nwith \\ and ) ${zh}\u0007`));
    const data = anExport(records);
    const bytes = renderSubjectExportPdf(data);
    const pdf = bytes.toString('latin1');
    const controls = [...pdf].filter((c) => c.charCodeAt(0) < 0x20 && c !== '\n');
    expect(controls).toEqual([]);
    const objects = expectValidXref(pdf);
    const pages = Number(/\/Type \/Pages .*\/Count (\d+)/.exec(pdf)![1]);
    expect(pages).toBeGreaterThan(3);
    expect(objects).toBe(8 + 2 * pages);
    expect(renderSubjectExportPdf(data).equals(bytes)).toBe(true);
  });
});
