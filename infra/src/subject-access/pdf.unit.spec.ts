import { describe, expect, it } from 'vitest';
import { SubjectExport, type ExportedRecord } from '@elma/domain';
import { readPdf } from '../pdf/read';
import { renderSubjectExportPdf } from './pdf';

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

const squeeze = (s: string) => s.replace(/\s+/g, '');

describe('the subject-access export PDF', () => {
  const zh = '王先生说交付风险很高，希望下周确认发货日期。';

  it('sets Chinese and Latin text in one line with the embedded font, and reads back as written', async () => {
    const pdf = await renderSubjectExportPdf(anExport([record('mem_1', `Mr Wang: ${zh}`)]));
    const read = await readPdf(pdf);
    const all = read.pages.join('\n');
    expect(squeeze(all)).toContain(squeeze(`Mr Wang: ${zh}`));
    expect(all).not.toContain('?');
    expect(read.info).toMatchObject({ Title: 'Subject access export sar_1', CreationDate: 'D:20261201000000Z' });
    expect(read.xmp.get('pdfaid:part')).toBe('3');
  });

  it('wraps a long Chinese paragraph (no spaces) between characters and keeps every character', async () => {
    const long = zh.repeat(12);
    const read = await readPdf(await renderSubjectExportPdf(anExport([record('mem_1', long)])));
    expect(squeeze(read.pages.join(''))).toContain(long);
  });

  it('drops control characters and pages a long export; same input, same text', async () => {
    const records = Array.from({ length: 40 }, (_, i) => record(`mem_${i}`, `line (${i})\nwith \\ and ) ${zh}\u0007`));
    const data = anExport(records);
    const read = await readPdf(await renderSubjectExportPdf(data));
    expect(read.pages.length).toBeGreaterThan(3);
    expect(read.pages.join('')).not.toContain('\u0007');
    expect(squeeze(read.pages.join(''))).toContain(squeeze(`line (39) with \\ and ) ${zh}`));
    expect((await readPdf(await renderSubjectExportPdf(data))).pages).toEqual(read.pages);
  });
});
