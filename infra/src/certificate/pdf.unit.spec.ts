import { describe, expect, it } from 'vitest';
import type { SignedCertificate } from '@elma/domain';
import { makeCertificate, type CertificateOptions } from '@elma/domain/testing';
import { renderCertificatePdf } from './pdf';
import { CertificateSigner } from './signing';

const signer = new CertificateSigner({ masterKey: new Uint8Array(32).fill(7) });

function aSignedCertificate(options: Omit<CertificateOptions, 'keyId'> = {}): SignedCertificate {
  return signer.sign(makeCertificate({ ...options, keyId: signer.keyId }));
}

interface ParsedPdf {
  text: string;
  objectOffsets: Map<number, number>;
  startxref: number;
  pageCount: number;
  pageObjects: number;
  positions: { x: number; y: number }[];
}

/** Reads the structure back from the bytes, as a PDF reader would start to. */
function parsePdf(bytes: Buffer): ParsedPdf {
  const pdf = bytes.toString('latin1');
  const startxref = Number(/startxref\n(\d+)\n%%EOF$/.exec(pdf)![1]);
  const [, first, count] = /^xref\n(\d+) (\d+)\n/.exec(pdf.slice(startxref))!.map(Number);
  const entriesAt = startxref + `xref\n${first} ${count}\n`.length;
  const objectOffsets = new Map<number, number>();
  for (let i = 0; i < count; i++) {
    const entry = pdf.slice(entriesAt + 20 * i, entriesAt + 20 * (i + 1));
    expect(entry).toMatch(/^\d{10} \d{5} [nf] \n$/);
    if (entry[17] === 'n') objectOffsets.set(first + i, Number(entry.slice(0, 10)));
  }
  const text = [...pdf.matchAll(/\(((?:\\.|[^\\)])*)\) Tj/g)].map((m) => m[1].replace(/\\(.)/g, '$1')).join('\n');
  const positions = [...pdf.matchAll(/ ([\d.]+) ([\d.]+) Td /g)].map((m) => ({ x: Number(m[1]), y: Number(m[2]) }));
  return {
    text,
    objectOffsets,
    startxref,
    pageCount: Number(/\/Type \/Pages .*\/Count (\d+)/.exec(pdf)![1]),
    pageObjects: pdf.match(/\/Type \/Page(?!s)/g)!.length,
    positions,
  };
}

function expectWellFormed(bytes: Buffer): ParsedPdf {
  const pdf = bytes.toString('latin1');
  expect(pdf.startsWith('%PDF-1.4')).toBe(true);
  expect(pdf.endsWith('%%EOF')).toBe(true);
  const parsed = parsePdf(bytes);
  expect(pdf.slice(parsed.startxref, parsed.startxref + 4)).toBe('xref');
  expect(parsed.objectOffsets.size).toBeGreaterThan(5);
  for (const [object, offset] of parsed.objectOffsets) {
    expect(pdf.slice(offset, offset + `${object} 0 obj`.length)).toBe(`${object} 0 obj`);
  }
  for (const m of pdf.matchAll(/<< \/Length (\d+) >>\nstream\n/g)) {
    const start = m.index + m[0].length;
    expect(pdf.slice(start + Number(m[1]), start + Number(m[1]) + '\nendstream'.length)).toBe('\nendstream');
  }
  expect(parsed.pageCount).toBe(parsed.pageObjects);
  // Everything is placed inside the A4 page, above the footer line.
  for (const { x, y } of parsed.positions) {
    expect(x).toBeGreaterThanOrEqual(56);
    expect(x).toBeLessThan(595.28 - 56);
    expect(y).toBeGreaterThanOrEqual(30);
    expect(y).toBeLessThan(841.89 - 56);
  }
  return parsed;
}

describe('certificate PDF', () => {
  it('is a well-formed PDF 1.4 with a correct cross-reference table', () => {
    expectWellFormed(renderCertificatePdf(aSignedCertificate()));
  });

  it('states the request, the verification result and how to verify the signature', () => {
    const signed = aSignedCertificate();

    const { text } = expectWellFormed(renderCertificatePdf(signed));

    expect(text).toContain('ELMA erasure certificate');
    expect(text).toContain('er-2024-0001');
    expect(text).toContain('not required');
    expect(text).toContain('PASSED');
    expect(text).toContain(signer.keyId);
    expect(text).toContain('elma verify-certificate <file> --jwks <url>');
    for (const probe of ['getById', 'bm25', 'knn', 'decrypt', 'byteScan']) expect(text).toContain(probe);
    expect(text).not.toContain(signed.signature.value);
  });

  it('a failed verification reads FAILED', () => {
    const { text } = expectWellFormed(renderCertificatePdf(aSignedCertificate({ passed: false })));

    expect(text).toContain('FAILED');
    expect(text).not.toContain('PASSED');
  });

  it('a closure of 5,000 records lists the first ten and counts the rest', () => {
    const { text, pageCount } = expectWellFormed(renderCertificatePdf(aSignedCertificate({ records: 5000, scopeIds: 5000 })));

    expect(text).toContain('mem-00009');
    expect(text).not.toContain('mem-00010');
    expect(text).toContain('... and 4990 more');
    expect(text).toContain('5000');
    expect(pageCount).toBeLessThanOrEqual(3);
  });

  it('a value too long for one page wraps onto a second page', () => {
    const { text, pageCount } = expectWellFormed(renderCertificatePdf(aSignedCertificate({ requestedBy: 'x'.repeat(12_000) })));

    expect(pageCount).toBeGreaterThanOrEqual(2);
    expect(text).toContain('page 2 of');
    expect(text).toContain('PASSED');
  });

  it('characters outside Latin-1 are replaced and PDF delimiters escaped', () => {
    const bytes = renderCertificatePdf(aSignedCertificate({ requestedBy: 'Zoë (DPO) \\ 李 \u2014 ok\nnext' }));

    const { text } = expectWellFormed(bytes);

    expect(text).toContain('Zoë (DPO) \\ ? ? ok?next');
    expect(bytes.toString('latin1')).toContain('Zoë \\(DPO\\) \\\\ ? ? ok?next');
  });

  it('the same certificate renders to the same bytes', () => {
    const signed = aSignedCertificate();

    expect(renderCertificatePdf(signed).equals(renderCertificatePdf(structuredClone(signed)))).toBe(true);
  });
});
