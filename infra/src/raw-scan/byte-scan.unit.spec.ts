import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHUNK_BYTES, listFiles, MIN_NEEDLE_BYTES, planShares, scanFiles, type Needle } from './byte-scan';

const utf8 = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
const needle = (id: string, text: string): Needle => ({ id, bytes: utf8(text) });
/** Filler that none of the text needles can match. */
const filler = (length: number) => Buffer.alloc(length, 0x2e);

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'elma-byte-scan-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, ...parts: Uint8Array[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, Buffer.concat(parts));
  return path;
}

describe('scanning files for erased bytes', () => {
  it('finds a needle in the middle of a file, at its offset', async () => {
    const path = await file('db.sqlite', filler(1000), utf8('Ada prefers green tea'), filler(1000));

    const report = await scanFiles([path], [needle('m1', 'Ada prefers green tea')]);

    expect(report.findings).toEqual([{ needleId: 'm1', path, offset: 1000 }]);
    expect(report).toMatchObject({ files: 1, bytes: 2021, paths: [path], tooShort: [] });
  });

  it('finds needles that span chunk boundaries, including a later chunk read after the overlap', async () => {
    const long = new Uint8Array(randomBytes(1000));
    const short = utf8('boundary');
    const content = filler(2 * CHUNK_BYTES + 4096);
    content.set(long, CHUNK_BYTES - 1); // one byte in the first chunk, the rest in the second
    content.set(short, 2 * CHUNK_BYTES - 7); // seven bytes before the second boundary, one after
    const path = await file('big.bin', content);

    const report = await scanFiles(
      [path],
      [
        { id: 'long', bytes: long },
        { id: 'short', bytes: short },
      ],
    );

    expect(report.findings).toEqual(
      expect.arrayContaining([
        { needleId: 'long', path, offset: CHUNK_BYTES - 1 },
        { needleId: 'short', path, offset: 2 * CHUNK_BYTES - 7 },
      ]),
    );
    expect(report.findings).toHaveLength(2);
    expect(report.bytes).toBe(content.length);
  });

  it('finds needles at offset 0 and at the very end of a file', async () => {
    const path = await file('edges.bin', utf8('first bytes of file'), filler(500), utf8('last bytes of file'));

    const report = await scanFiles([path], [needle('start', 'first bytes of file'), needle('end', 'last bytes of file')]);

    expect(report.findings).toEqual([
      { needleId: 'start', path, offset: 0 },
      { needleId: 'end', path, offset: 519 },
    ]);
  });

  it('reports nothing when the needle is absent', async () => {
    const path = await file('clean.bin', filler(10_000), utf8('Ada prefers green'));

    const report = await scanFiles([path], [needle('m1', 'Ada prefers green tea')]);

    expect(report.findings).toEqual([]);
    expect(report.files).toBe(1);
  });

  it('tells apart needles that share their first 8 bytes', async () => {
    const path = await file('shared.bin', filler(100), utf8('ABCDEFGH-the-longer-one'), filler(100));

    const report = await scanFiles(
      [path],
      [
        needle('other', 'ABCDEFGH-other'),
        needle('present', 'ABCDEFGH-the-longer-one'),
        needle('longer', 'ABCDEFGH-the-longer-one-and-more'),
      ],
    );

    expect(report.findings).toEqual([{ needleId: 'present', path, offset: 100 }]);
  });

  it('reports a needle once per file it is in, at its first offset', async () => {
    const text = 'a memory copied into the WAL';
    const db = await file('db.sqlite', filler(10), utf8(text), filler(10), utf8(text));
    const wal = await file('db.sqlite-wal', utf8(text));

    const report = await scanFiles([db, wal], [needle('m1', text)]);

    expect(report.findings).toEqual([
      { needleId: 'm1', path: db, offset: 10 },
      { needleId: 'm1', path: wal, offset: 0 },
    ]);
  });

  it('does not search needles shorter than the minimum and lists their ids once', async () => {
    const path = await file('short.bin', utf8('tea tea'));

    const report = await scanFiles([path], [needle('m1', 'tea'), needle('m1', 'tea tea'), needle('m2', 'x')]);

    expect(utf8('tea tea').length).toBeLessThan(MIN_NEEDLE_BYTES);
    expect(report.findings).toEqual([]);
    expect(report.tooShort.sort()).toEqual(['m1', 'm2']);
    expect(await scanFiles([], [needle('m1', 'tea')])).toEqual({ files: 0, bytes: 0, paths: [], findings: [], tooShort: ['m1'] });
  });

  it('finds Chinese plaintext by its UTF-8 bytes', async () => {
    const text = '张伟的护照号码在抽屉里';
    const path = await file('zh.bin', filler(33), utf8(text), filler(33));

    const report = await scanFiles([path], [needle('m-zh', text)]);

    expect(report.findings).toEqual([{ needleId: 'm-zh', path, offset: 33 }]);
  });

  it('finds an embedding by its raw float32 bytes', async () => {
    const vector = Float32Array.from({ length: 384 }, (_, i) => Math.sin(i + 1) / 10);
    const bytes = new Uint8Array(vector.buffer);
    const path = await file('vectors.bin', filler(4097), bytes, filler(3));

    const report = await scanFiles([path], [{ id: 'm-vec', bytes }]);

    expect(report.findings).toEqual([{ needleId: 'm-vec', path, offset: 4097 }]);
  });

  it('skips files that vanished after listing', async () => {
    const kept = await file('db.sqlite', utf8('still here, and secret'));
    const gone = join(dir, 'db.sqlite-shm');

    const report = await scanFiles([gone, kept], [needle('m1', 'and secret')]);

    expect(report).toMatchObject({ files: 1, paths: [kept], findings: [{ needleId: 'm1', path: kept, offset: 12 }] });
  });
});

describe('sharing a scan among processes', () => {
  it('cuts the files into shares of about equal bytes, each file covered once and its last segment open-ended', () => {
    const shares = planShares(['a', 'b', 'c'], [100, 500, 0], 3);

    expect(shares).toEqual([
      [
        { path: 'a', start: 0, end: null },
        { path: 'b', start: 0, end: 100 },
      ],
      [{ path: 'b', start: 100, end: 300 }],
      [
        { path: 'b', start: 300, end: null },
        { path: 'c', start: 0, end: null },
      ],
    ]);
    expect(planShares(['a'], [0], 2)).toEqual([[{ path: 'a', start: 0, end: null }]]);
  });

  it('finds a needle cut in two by a segment boundary once, at its first offset in the file', async () => {
    const text = 'a sentence the erasure must not leave behind';
    const content = filler(30_000);
    content.set(utf8(text), 9_990); // across the first cut of three shares of 10,000 bytes
    content.set(utf8(text), 25_000); // again, in the last segment
    const path = await file('split.sqlite', content);
    const other = await file('other.sqlite-wal', utf8(text));

    const report = await scanFiles([path, other], [needle('m1', text)], { processes: 3, minShareBytes: 1 });

    expect(report.findings).toEqual([
      { needleId: 'm1', path, offset: 9_990 },
      { needleId: 'm1', path: other, offset: 0 },
    ]);
    expect(report).toMatchObject({ files: 2, bytes: content.length + text.length, paths: [path, other] });
  });

  it.each([
    ['long needles only (the widest stride)', 24],
    ['one needle of 8 bytes among them (stride 1)', 8],
  ])('finds each needle at its first offset in each file, in one process or several: %s', async (_, shortest) => {
    const lengths = [shortest, ...Array.from({ length: 39 }, (_, i) => 24 + i * 7)];
    const needles: Needle[] = lengths.map((length, i) => ({ id: `m${i % 20}`, bytes: new Uint8Array(randomBytes(length)) }));
    const contents = [70_000, 3, 0, 41_000, 9_999].map((length, f) => {
      const content = Buffer.from(randomBytes(length));
      for (let planted = 0; planted < 12 && length > 400; planted++) {
        const bytes = needles[(f * 13 + planted * 7) % needles.length].bytes;
        content.set(bytes, (planted * 5_881 + f * 977) % (length - bytes.length));
      }
      return content;
    });
    const paths = [...(await Promise.all(contents.map((content, f) => file(`f${f}.bin`, content)))), join(dir, 'vanished.bin')];
    // What Buffer.indexOf finds: each needle form's first occurrence per file.
    const expected = contents.flatMap((content, f) =>
      needles
        .map((n) => ({ needleId: n.id, path: paths[f], offset: content.indexOf(n.bytes) }))
        .filter((finding) => finding.offset >= 0)
        .sort((a, b) => a.offset - b.offset),
    );
    expect(expected.length).toBeGreaterThan(20);

    for (const processes of [1, 2, 3]) {
      const report = await scanFiles(paths, needles, { processes, minShareBytes: 1 });
      expect(report.findings).toEqual(expected);
      expect(report).toMatchObject({ files: 5, bytes: 70_000 + 3 + 41_000 + 9_999, paths: paths.slice(0, 5) });
    }
  });

  it('finds a needle at every offset modulo the stride, and a repeated one at its first', async () => {
    const text = 'a long enough sentence to be searched with the widest stride';
    const periodic = 'abcde'.repeat(6);
    const files = await Promise.all(
      Array.from({ length: 17 }, (_, shift) =>
        file(`shift${shift}.bin`, filler(1000 + shift), utf8(text), filler(50), utf8(`${periodic}abcde`)),
      ),
    );

    const report = await scanFiles(files, [needle('m1', text), needle('m2', periodic)]);

    expect(report.findings).toEqual(
      files.flatMap((path, shift) => [
        { needleId: 'm1', path, offset: 1000 + shift },
        { needleId: 'm2', path, offset: 1000 + shift + text.length + 50 },
      ]),
    );
  });

  it('keeps small scans in one process', async () => {
    const path = await file('small.bin', filler(1000), utf8('only one process for this'));

    const report = await scanFiles([path], [needle('m1', 'only one process for this')], { processes: 4 });

    expect(report.findings).toEqual([{ needleId: 'm1', path, offset: 1000 }]);
  });
});

describe('listing files to scan', () => {
  it('lists regular files in nested folders, sorted, without following links or missing roots', async () => {
    await mkdir(join(dir, 'data', 'tenants', 't1'), { recursive: true });
    await mkdir(join(dir, 'data', 'cache'), { recursive: true });
    await mkdir(join(dir, 'outside'));
    await file('data/tenants/t1/index.usearch', utf8('x'));
    await file('data/events.sqlite', utf8('x'));
    await file('data/cache/tmp', utf8('x'));
    await file('outside/secret', utf8('x'));
    await symlink(join(dir, 'outside'), join(dir, 'data', 'link-to-outside'));
    await symlink(join(dir, 'outside', 'secret'), join(dir, 'data', 'link-to-secret'));

    const paths = await listFiles([join(dir, 'data'), join(dir, 'missing')], {
      exclude: (path) => path.endsWith('cache'),
    });

    expect(paths).toEqual([join(dir, 'data', 'events.sqlite'), join(dir, 'data', 'tenants', 't1', 'index.usearch')]);
  });

  it('feeds the scan, which finds the needle in a nested file', async () => {
    await mkdir(join(dir, 'a', 'b', 'c'), { recursive: true });
    const deep = await file('a/b/c/deep.bin', filler(7), utf8('erased memory text'));
    await file('a/top.bin', filler(50));

    const report = await scanFiles(await listFiles([dir]), [needle('m1', 'erased memory text')]);

    expect(report.files).toBe(2);
    expect(report.findings).toEqual([{ needleId: 'm1', path: deep, offset: 7 }]);
  });
});

describe('scan speed', () => {
  it('searches 2,000 needles over 16 MiB in one pass, quickly', async () => {
    const content = randomBytes(16 * 1024 * 1024);
    const needles: Needle[] = Array.from({ length: 2000 }, (_, i) => ({ id: `m${i}`, bytes: new Uint8Array(randomBytes(64)) }));
    const planted = [
      { index: 17, offset: 12_345 },
      { index: 1000, offset: CHUNK_BYTES - 30 },
      { index: 1999, offset: content.length - 64 },
    ];
    for (const { index, offset } of planted) content.set(needles[index].bytes, offset);
    const path = await file('random.bin', content);

    const started = performance.now();
    const report = await scanFiles([path], needles);
    const elapsed = performance.now() - started;

    expect(elapsed).toBeLessThan(5000);
    expect(report.findings).toEqual(planted.map(({ index, offset }) => ({ needleId: `m${index}`, path, offset })));
  });

  it('stays fast when sparse vectors starting with zero floats meet zeroed pages', async () => {
    const sparse = (slot: number) => {
      const vector = new Float32Array(384);
      vector[200 + slot] = 0.25 + slot / 100;
      vector[300] = -0.5;
      return new Uint8Array(vector.buffer);
    };
    const needles: Needle[] = Array.from({ length: 5 }, (_, i) => ({ id: `v${i}`, bytes: sparse(i) }));
    const content = Buffer.alloc(16 * 1024 * 1024);
    content.set(needles[3].bytes, 5_000_000);
    const path = await file('zeroed.sqlite', content);

    const started = performance.now();
    const report = await scanFiles([path], needles);
    const elapsed = performance.now() - started;

    expect(elapsed).toBeLessThan(5000);
    expect(report.findings).toEqual([{ needleId: 'v3', path, offset: 5_000_000 }]);
  });
});
