import { describe, expect, it } from 'vitest';
import type { SignedCertificate } from '@elma/domain';
import { makeCertificate, type CertificateOptions } from '@elma/domain/testing';
import { pdfBytesInflated } from '../../../tests/support/pdf-bytes';
import { PdfLayout } from '../pdf/document';
import { readPdf } from '../pdf/read';
import { CERTIFICATE_PDF_LAYOUT, certificateAttachment, documentFingerprint, renderCertificatePdf, signatureFingerprint } from './pdf';
import { CertificateSigner } from './signing';
import { verifyCertificateFile } from './verify';

const signer = new CertificateSigner({ masterKey: new Uint8Array(32).fill(7) });

function aSignedCertificate(options: Omit<CertificateOptions, 'keyId'> = {}): SignedCertificate {
  return signer.sign(makeCertificate({ ...options, keyId: signer.keyId }));
}

const staff = {
  organisation: '上海示例数据科技有限公司',
  requestedBy: 'compliance-li',
  requestedByName: '李娜',
  approvedBy: 'dpo-wang',
  approvedByName: '王伟 (DPO)',
};

const text = (pages: string[]) => pages.join('\n');
const squeeze = (s: string) => s.replace(/\s+/g, '');

describe('the erasure certificate PDF', () => {
  it('parses, carries the signed certificate as its attachment, and verifies on its own', async () => {
    const signed = aSignedCertificate(staff);

    const pdf = await renderCertificatePdf(signed);
    const read = await readPdf(pdf);

    expect(pdf.subarray(0, 8).toString()).toBe('%PDF-1.7');
    expect(read.pages.length).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(read.attachments.get('certificate.json')!.toString('utf8'))).toEqual(signed);
    expect(read.attachments.get('certificate.json')).toEqual(certificateAttachment(signed).bytes);
    const check = await verifyCertificateFile(pdf, signer.jwks());
    expect(check).toMatchObject({ status: 'valid', format: 'pdf', type: 'elma.erasure-certificate', visible: { status: 'matches' } });
  });

  it('shows the organisation and the staff by name in Chinese, with the result and every fingerprint explained', async () => {
    const signed = aSignedCertificate(staff);

    const all = squeeze(text((await readPdf(await renderCertificatePdf(signed))).pages));

    for (const expected of [
      '上海示例数据科技有限公司',
      '李娜(compliance-li)',
      '王伟(DPO)(dpo-wang)',
      '数据删除证明',
      'PASSED',
      'er-2024-0001',
      signer.keyId,
      signatureFingerprint(signed.signature.value),
      documentFingerprint(signed.certificate),
      signed.certificate.auditAnchor.hash,
      'Contentfingerprint',
      'Subjectpseudonym',
      'elmaverify-certificatecertificate.pdf--jwkselma-keys.json',
    ]) {
      expect(all).toContain(squeeze(expected));
    }
    for (const probe of ['getById', 'bm25', 'knn', 'decrypt', 'byteScan']) expect(all).toContain(probe);
    expect(all).not.toContain(signed.signature.value);
  });

  it('has PDF/A metadata: title, author, dates, XMP and the document language', async () => {
    const signed = aSignedCertificate(staff);

    const { info, xmp, lang } = await readPdf(await renderCertificatePdf(signed));

    expect(info).toMatchObject({ Title: 'Erasure certificate er-2024-0001', Author: staff.organisation, Creator: 'ELMA' });
    expect(info.CreationDate).toBe('D:20240501100100Z');
    expect(lang).toBe('en');
    expect(xmp.get('pdfaid:part')).toBe('3');
    expect(xmp.get('dc:title')).toBe('Erasure certificate er-2024-0001');
    expect(xmp.get('xmp:createdate')).toBe('2024-05-01T10:01:00Z');
    expect((info.Custom as Record<string, string>).ElmaLayout).toBe(CERTIFICATE_PDF_LAYOUT);
  });

  it('names a data subject who asked for their own erasure by pseudonym only', async () => {
    const pseudonym = `psn_${'c'.repeat(32)}`;
    const signed = aSignedCertificate({ requestedBy: pseudonym });

    const all = squeeze(text((await readPdf(await renderCertificatePdf(signed))).pages));

    expect(all).toContain(squeeze(`the data subject, by pseudonym 数据主体本人（以假名表示） ${pseudonym}`));
  });

  it('embeds its fonts as subsets, and Chinese comes back as Chinese (no ? and no missing glyphs)', async () => {
    const zh = '王先生说交付风险很高';
    const pdf = await renderCertificatePdf(aSignedCertificate({ ...staff, requestedByName: zh }));

    const { bytes, inflated } = pdfBytesInflated(pdf);
    const all = text((await readPdf(pdf)).pages);

    expect(inflated).toBeGreaterThan(3);
    expect(all).toContain(zh);
    expect(all).not.toContain('?');
    // Subset fonts are named with a six-letter tag; both faces are embedded (FontFile3: CFF).
    expect(bytes.toString('latin1').match(/\/FontName \/[A-Z]{6}\+NotoSansHans-(Regular|Bold)/g)?.length).toBe(2);
    expect(bytes.toString('latin1')).toContain('/FontFile3');
    expect(pdf.length).toBeLessThan(1_000_000);
  });

  it('a closure of 5,000 records lists the first ten and counts the rest', async () => {
    const all = squeeze(text((await readPdf(await renderCertificatePdf(aSignedCertificate({ records: 5000, scopeIds: 5000 })))).pages));

    expect(all).toContain('mem-00009');
    expect(all).not.toContain('mem-00010');
    expect(all).toContain('...and4990more');
  });

  it('control characters in a value do not move the layout, and a long value wraps onto more pages', async () => {
    const read = await readPdf(
      await renderCertificatePdf(aSignedCertificate({ requestedByName: `Zoë (DPO)\n\u0007 ${'x'.repeat(5_000)}` })),
    );

    expect(read.pages.length).toBeGreaterThanOrEqual(2);
    expect(squeeze(text(read.pages))).toContain('Zoë(DPO)');
    expect(text(read.pages)).toContain('page 2 of');
    expect(text(read.pages)).not.toContain('\u0007');
  });
});

describe('verifying a certificate PDF', () => {
  it('a page that shows something else than the attached certificate is INVALID', async () => {
    const signed = aSignedCertificate(staff);
    // A forger keeps the genuine signed JSON and draws a page of their own, with the same layout marker.
    const forged = new PdfLayout(
      { title: 't', author: 'a', subject: 's', keywords: 'k', lang: 'en', createdAt: new Date(0), layout: CERTIFICATE_PDF_LAYOUT },
      { body: 9.5, table: 8, label: 8.5 },
    );
    forged.paragraph('Erasure certificate: 5,000 records erased, verification PASSED, approved by the regulator.');

    const check = await verifyCertificateFile(await forged.finish('forged', [certificateAttachment(signed)]), signer.jwks());

    expect(check).toMatchObject({ status: 'invalid', format: 'pdf', visible: { status: 'differs', page: 1 } });
  });

  it('an attachment changed after signing is INVALID, and a PDF without one cannot be judged', async () => {
    const signed = aSignedCertificate(staff);
    const tampered = structuredClone(signed);
    tampered.certificate.closure.size = 1;

    expect(await verifyCertificateFile(await renderCertificatePdf(tampered), signer.jwks())).toEqual({
      status: 'invalid',
      format: 'pdf',
      reason: 'signature does not match',
    });
    const bare = new PdfLayout(
      { title: 't', author: 'a', subject: 's', keywords: 'k', lang: 'en', createdAt: new Date(0), layout: 'x' },
      { body: 9.5, table: 8, label: 8.5 },
    );
    bare.paragraph('no attachment');
    expect(await verifyCertificateFile(await bare.finish('bare'), signer.jwks())).toMatchObject({ status: 'unreadable', format: 'pdf' });
    expect(await verifyCertificateFile(Buffer.from('%PDF-1.7\ngarbage'), signer.jwks())).toMatchObject({
      status: 'unreadable',
      format: 'pdf',
    });
  });

  it('a JSON certificate verifies as before, and one of a newer format is not judged', async () => {
    const signed = aSignedCertificate();
    const json = Buffer.from(JSON.stringify(signed));

    expect(await verifyCertificateFile(json, signer.jwks())).toMatchObject({ status: 'valid', format: 'json', kid: signer.keyId });
    const newer = { ...signed, certificate: { ...signed.certificate, version: 99 } };
    expect(await verifyCertificateFile(Buffer.from(JSON.stringify(newer)), signer.jwks())).toMatchObject({
      status: 'unreadable',
      reason: expect.stringContaining('format version 99 is newer'),
    });
    expect(await verifyCertificateFile(Buffer.from('certificate? what certificate'), signer.jwks())).toMatchObject({
      status: 'unreadable',
    });
  });
});
