import { describe, expect, it } from 'vitest';
import { breakdown, fileGroupOf, partitionPartOf, perEvent } from './storage';

describe('storage breakdown', () => {
  it('puts each data-folder file with its engine', () => {
    expect(fileGroupOf('events.db')).toBe('event log');
    expect(fileGroupOf('events.db-wal')).toBe('event log');
    expect(fileGroupOf('index/tenant-bench_0.db')).toBe('index partitions');
    expect(fileGroupOf('index/tenant-bench_0.db-wal')).toBe('index partitions');
    expect(fileGroupOf('index/tenant-bench_0.usearch')).toBe('vector graphs');
    expect(fileGroupOf('keys.db')).toBe('key vault');
    expect(fileGroupOf('kms-keys.db-shm')).toBe('key vault');
    for (const other of ['index/meta.db', 'tokens.db', 'erasure-ledger.db', 'master.key', 'events.dbx'])
      expect(fileGroupOf(other)).toBe('other files');
  });

  it('splits a partition into record rows, FTS parts, indexes and other tables', () => {
    const indexes = new Set(['memories_by_status', 'memories_timeline']);
    expect(partitionPartOf('memories', indexes)).toBe('record rows');
    expect(partitionPartOf('memories_fts_data', indexes)).toBe('FTS index');
    expect(partitionPartOf('memories_fts_idx', indexes)).toBe('FTS index');
    expect(partitionPartOf('memories_fts_content', indexes)).toBe('FTS stored text');
    expect(partitionPartOf('memories_fts_docsize', indexes)).toBe('FTS doc sizes and config');
    expect(partitionPartOf('memories_by_status', indexes)).toBe('secondary indexes');
    expect(partitionPartOf('sqlite_autoindex_usage_1', indexes)).toBe('secondary indexes');
    expect(partitionPartOf('usage', indexes)).toBe('other tables');
    expect(partitionPartOf('sqlite_schema', indexes)).toBe('other tables');
  });

  it('adds up files and b-trees, with the bytes no b-tree holds as free pages and WAL', () => {
    const result = breakdown(
      [
        { path: 'events.db', bytes: 1_000 },
        { path: 'index/tenant-a.db', bytes: 4_096 * 10 },
        { path: 'index/tenant-a.db-wal', bytes: 500 },
        { path: 'index/tenant-a.usearch', bytes: 300 },
        { path: 'keys.db', bytes: 40 },
        { path: 'tokens.db', bytes: 7 },
      ],
      [
        {
          btrees: [
            { name: 'memories', bytes: 4_096 * 6 },
            { name: 'memories_fts_data', bytes: 4_096 * 2 },
            { name: 'memories_by_status', bytes: 4_096 },
          ],
          indexes: new Set(['memories_by_status']),
          fileBytes: 4_096 * 10 + 500,
          vectorBytes: 1_536,
          recordBytes: 900,
        },
      ],
    );
    expect(Object.fromEntries(result.files)).toEqual({
      'event log': 1_000,
      'index partitions': 41_460,
      'vector graphs': 300,
      'key vault': 40,
      'other files': 7,
    });
    expect(Object.fromEntries(result.partitions)).toEqual({
      'record rows': 24_576,
      'FTS index': 8_192,
      'FTS stored text': 0,
      'FTS doc sizes and config': 0,
      'secondary indexes': 4_096,
      'other tables': 0,
      'free pages, WAL': 4_596,
    });
    expect([...result.partitions.keys()][0]).toBe('record rows');
    expect([...result.partitions.values()].reduce((a, b) => a + b, 0)).toBe(result.files.get('index partitions'));
    expect(result.total).toBe(42_807);
    expect(result.rowPayload).toEqual({ vectors: 1_536, records: 900 });
  });

  it('prints bytes per event in KB', () => {
    expect(perEvent(9_420, 1)).toBe('9.20 KB');
    expect(perEvent(4 * 1024 * 100_000, 100_000)).toBe('4.00 KB');
    expect(perEvent(10, 0)).toBe('0.01 KB');
  });
});
