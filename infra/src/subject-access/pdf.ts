import { MemoryKind, type ExportedRecord, type SubjectExport } from '@elma/domain';
import { PdfLayout } from '../pdf/document';

/**
 * Renders a subject-access export as a PDF a data subject can read. The JSON export stays the authoritative,
 * portable document; this is its view, on the same layout as the erasure certificate (infra/src/pdf/document.ts):
 * PDF/A-3b, the CJK font embedded as a subset, so Chinese and English read alike. Same export, same text.
 */
export async function renderSubjectExportPdf(data: SubjectExport): Promise<Buffer> {
  const layout = new PdfLayout(
    {
      title: `Subject access export ${data.requestId}`,
      author: 'ELMA',
      subject: `Subject access export ${data.requestId}, tenant ${data.tenant}: ${data.counts.records} records`,
      keywords: 'ELMA, subject access, GDPR Art. 15, Art. 20',
      lang: 'en',
      createdAt: new Date(data.producedAt),
      layout: 'elma.subject-export.pdf/1',
    },
    { body: 9.5, table: 7.5, label: 9 },
  );
  writeExport(layout, data);
  return layout.finish(`ELMA subject access export - request ${data.requestId}`);
}

function writeExport(layout: PdfLayout, x: SubjectExport): void {
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
      layout.field('Record', w.id, { font: 'bold' });
      layout.field('Kind, status', `${w.kind}, ${w.status}`);
      layout.field('Recorded at', w.recordedAt);
      layout.field('From your records', w.fromRecordIds.join(', ') || 'none');
      layout.field('Other sources', `${w.otherSources} (of other data subjects)`);
      layout.field('Marks', marksText(w.marks));
    }
  }

  if (x.events.length > 0) {
    layout.heading('Where the data came from', layout.tableHeight(Math.min(3, x.events.length)));
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

  layout.heading('Processing history', layout.tableHeight(Math.min(3, x.processing.length)));
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

function writeRecord(layout: PdfLayout, r: ExportedRecord): void {
  layout.gap(6);
  layout.field('Record', r.id, { font: 'bold' });
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
