import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRecord } from '@elma/domain/testing';
import { HashingEmbedder, SqliteEventLog, SqliteMemoryIndex } from '@elma/infra';
import { Floor } from './floor';
import { measureStorage } from './storage';

/**
 * The floor and the storage breakdown on a real embedded index folder: records in English and Chinese
 * upserted through the index adapter, the graph file written by its flush.
 */
describe('the floor and the storage breakdown on real partition files', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'elma-bench-floor-'));
  const indexDir = join(dataDir, 'index');
  const embedder = new HashingEmbedder();
  const texts = [
    'Rotterdam depot closes at 17:00 on Fridays.',
    'The invoice for the Berlin warehouse was paid late.',
    '鹿特丹仓库周五17点关门。',
    '上海客户的发票已经付款。',
    ...Array.from({ length: 40 }, (_, i) => `Routine ticket ${i} about a password reset and a callback.`),
  ];
  let index: SqliteMemoryIndex;

  beforeAll(async () => {
    index = await SqliteMemoryIndex.open({ dir: indexDir, dimensions: embedder.dimensions, model: embedder.model });
    await index.upsert(
      'acme',
      texts.map((text, i) => {
        const record = makeRecord({ id: `mem-${i}`, tenant: 'acme', text });
        return { record, vector: embedder.embedOne(text), model: embedder.model };
      }),
    );
    await index.flush();
    const log = SqliteEventLog.open(join(dataDir, 'events.db'));
    await log.append(
      'events-acme-p1',
      [0, 1].map((i) => ({ id: randomUUID(), type: 'EventIngested', data: { text: texts[i] } })),
      {
        expectedRevision: 'no_stream',
      },
    );
    await log.append('memory-acme-mem-0', [{ id: randomUUID(), type: 'MemoryRecorded', data: { n: 1 }, metadata: { m: 1 } }], {
      expectedRevision: 'no_stream',
    });
    await log.close();
  });
  afterAll(async () => {
    await index?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reads the rows both routes find, in English and in Chinese, on its own connection and graph', async () => {
    const floor = new Floor({ indexDir, tenant: 'acme', dimensions: embedder.dimensions, depth: 10, rows: 5 });
    try {
      expect(floor.size).toBe(texts.length);
      const english = floor.query('Rotterdam depot', embedder.embedOne('Rotterdam depot'));
      expect(english[0]).toBe('mem-0');
      expect(english).toHaveLength(5);
      expect(floor.query('鹿特丹仓库', embedder.embedOne('鹿特丹仓库'))[0]).toBe('mem-2');
    } finally {
      floor.close();
    }
    // Closing the floor leaves the index's own files as they were: the adapter still answers.
    expect(await index.count('acme')).toBe(texts.length);
  });

  it('splits the folder by engine and the partition by table, the parts adding up to the files', () => {
    // Measured before: a read-only connection in WAL mode may add its -shm and -wal files.
    const logFiles = ['events.db', 'events.db-wal', 'events.db-shm'].map((f) => join(dataDir, f)).filter((f) => existsSync(f));
    const logBytes = logFiles.reduce((sum, f) => sum + statSync(f).size, 0);
    const storage = measureStorage(dataDir);
    expect(storage.files.get('event log')).toBe(logBytes);
    // The event log by b-tree and by event type: data and metadata as stored (JSON).
    expect(storage.eventLog?.parts.get('stream names')).toBeGreaterThan(0);
    expect(storage.eventLog?.parts.get('indexes')).toBeGreaterThan(0);
    expect(storage.eventLog?.types).toEqual([
      {
        type: 'EventIngested',
        events: 2,
        bytes: [0, 1].reduce((sum, i) => sum + Buffer.byteLength(JSON.stringify({ text: texts[i] })) + 2, 0),
      },
      { type: 'MemoryRecorded', events: 1, bytes: '{"n":1}{"m":1}'.length },
    ]);
    expect(storage.files.get('vector graphs')).toBe(statSync(join(indexDir, 'tenant-acme.usearch')).size);
    const partitionBytes = [...storage.partitions.values()].reduce((sum, b) => sum + b, 0);
    expect(partitionBytes).toBe(storage.files.get('index partitions'));
    expect(storage.partitions.get('record rows')).toBeGreaterThan(0);
    expect(storage.partitions.get('FTS index')).toBeGreaterThan(0);
    // A float32 scale and 384 int8 components per record (vectors format 2); the FTS table stores no text.
    expect(storage.rowPayload.vectors).toBe(texts.length * (4 + 384));
    expect(storage.partitions.get('FTS stored text')).toBe(0);
    expect(storage.rowPayload.records).toBeGreaterThan(texts.join('').length);
    expect([...storage.files.values()].reduce((sum, b) => sum + b, 0)).toBe(storage.total);
  });
});
