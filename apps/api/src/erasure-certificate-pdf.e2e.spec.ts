import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPdf, verifyCertificateFile } from '@elma/infra';
import { pdfBytesInflated } from '../../../tests/support/pdf-bytes';
import { callApi, changePolicy, chatEvent, startTestApp, type TestApp, settleErasure } from './testing';

/**
 * The certificate PDF as a compliance officer downloads it from a running ELMA with Temporal: it verifies on
 * its own, names the organisation and the staff, and a data subject who erased their own records appears by
 * pseudonym only, anywhere in the file.
 */
const ORGANISATION = '上海示例数据科技有限公司 (Example Data Shanghai)';
const SUBJECT = 'cust-wang-8812';
const SUBJECT_NAME = '王小明';

let t: TestApp;
const tokens: Record<string, string> = {};
const call = (who: string, method: string, path: string, body?: unknown) => callApi(t.url, tokens[who], method, path, body);

async function ingest(subject: string, texts: string[]) {
  const response = await call('agent', 'POST', '/v1/events', { events: texts.map((text) => chatEvent(subject, text)) });
  expect(response.status, response.text).toBe(202);
  await t.elma.runner.waitFor(await t.elma.log.headPosition());
}

const settle = (id: string, who: string, until?: string[]) => settleErasure(t.url, tokens[who], id, until);

beforeAll(async () => {
  t = await startTestApp({ temporal: {}, env: { ELMA_ORGANISATION_NAME: ORGANISATION } });
  tokens.agent = await t.token({ sub: 'agent-1', roles: ['agent'], purposes: ['support'], clearance: 'restricted' });
  tokens.admin = await t.token({ sub: 'admin-1', roles: ['admin'], purposes: ['support'], clearance: 'restricted' });
  tokens.self = await t.token({ sub: SUBJECT, name: SUBJECT_NAME, roles: [], purposes: ['support'], clearance: 'internal' });
  tokens.compliance = await t.token({
    sub: 'compliance-li',
    name: '李娜',
    roles: ['compliance'],
    purposes: ['support'],
    clearance: 'restricted',
  });
  tokens.dpo = await t.token({ sub: 'dpo-wang', name: '王伟', roles: ['dpo'], purposes: ['support'], clearance: 'restricted' });
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('the erasure certificate PDF from a running ELMA', () => {
  it('a data subject erasing their own records: the PDF verifies on its own and holds neither their id nor their name', async () => {
    await changePolicy(t.url, tokens.admin, (p) =>
      p.rules.push({ id: 'erase-own', operations: ['erase'], when: { ownerIsSubject: true, crossPurpose: true } }),
    );
    await ingest(SUBJECT, ['王小明的快递地址是浦东新区。', 'Mr Wang prefers delivery on Saturdays.']);
    const requested = await call('self', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: SUBJECT },
      reason: 'subject_request',
    });
    expect(requested.status, requested.text).toBe(202);
    const id = requested.body.requestId as string;
    expect((await settle(id, 'self')).status).toBe('completed');

    const json = await call('self', 'GET', `/v1/erasures/${id}/certificate`);
    const pdf = await call('self', 'GET', `/v1/erasures/${id}/certificate.pdf`);
    expect(pdf.status).toBe(200);
    expect(pdf.contentType).toBe('application/pdf');
    const jwks = (await fetch(`${t.url}/.well-known/elma-keys`).then((r) => r.json())) as unknown;

    const check = await verifyCertificateFile(pdf.bytes, jwks);
    expect(check).toMatchObject({ status: 'valid', format: 'pdf', visible: { status: 'matches' } });
    const read = await readPdf(pdf.bytes);
    expect(JSON.parse(read.attachments.get('certificate.json')!.toString('utf8'))).toEqual(json.body);
    const pseudonym = json.body.certificate.request.scope.subjectPseudonym as string;
    expect(json.body.certificate.request).toMatchObject({ requestedBy: pseudonym });
    expect(json.body.certificate.request.requestedByName).toBeUndefined();
    expect(json.body.certificate.organisation).toBe(ORGANISATION);
    const page = read.pages.join('\n').replace(/\s+/g, '');
    expect(page).toContain(ORGANISATION.replace(/\s+/g, ''));
    expect(page).toContain(`thedatasubject,bypseudonym数据主体本人（以假名表示）${pseudonym}`);
    // Nowhere in the file, compressed streams (page text, fonts, the attachment, XMP) inflated too.
    const { bytes, inflated } = pdfBytesInflated(pdf.bytes);
    expect(inflated).toBeGreaterThan(3);
    for (const needle of [SUBJECT, SUBJECT_NAME, '浦东新区']) {
      expect({
        needle,
        utf8: bytes.includes(Buffer.from(needle, 'utf8')),
        utf16: bytes.includes(Buffer.from(needle, 'utf16le').swap16()),
      }).toEqual({
        needle,
        utf8: false,
        utf16: false,
      });
    }
  });

  it('an erasure asked for by one officer and approved by another shows both by name', async () => {
    await changePolicy(t.url, tokens.admin, (p) => (p.erasure = { approvalThreshold: 1, approvalTimeoutHours: 1 }));
    await ingest('cust-zhao', ['赵女士的合同编号 HT-2291。', 'Ms Zhao asked for a callback.']);
    const requested = await call('compliance', 'POST', '/v1/erasures', {
      scope: { type: 'subject', subject: 'cust-zhao' },
      reason: 'legal',
    });
    expect(requested.status, requested.text).toBe(202);
    const id = requested.body.requestId as string;
    expect((await settle(id, 'dpo', ['awaiting_approval', 'completed', 'failed'])).status).toBe('awaiting_approval');
    const approved = await call('dpo', 'POST', `/v1/erasures/${id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ approvedBy: 'dpo-wang', approvedByName: '王伟' });
    expect((await settle(id, 'dpo')).status).toBe('completed');
    // The progress names the approver too (the workflow knows the subject only; the name is in the erasure stream).
    expect((await call('compliance', 'GET', `/v1/erasures/${id}`)).body).toMatchObject({ approvedBy: 'dpo-wang', approvedByName: '王伟' });
    const listed = (await call('compliance', 'GET', '/v1/erasures?status=completed')).body.items as { requestId: string }[];
    expect(listed.find((e) => e.requestId === id)).toMatchObject({ approvedBy: 'dpo-wang', approvedByName: '王伟' });

    const json = await call('dpo', 'GET', `/v1/erasures/${id}/certificate`);
    expect(json.body.certificate.request).toMatchObject({
      requestedBy: 'compliance-li',
      requestedByName: '李娜',
      approvedBy: 'dpo-wang',
      approvedByName: '王伟',
    });
    const page = (await readPdf((await call('dpo', 'GET', `/v1/erasures/${id}/certificate.pdf`)).bytes)).pages.join('').replace(/\s+/g, '');
    expect(page).toContain('李娜(compliance-li)');
    expect(page).toContain('王伟(dpo-wang)');
  });
});
