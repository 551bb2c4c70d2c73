import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EmbeddingRole } from '@elma/domain';
import { HashingEmbedder } from '@elma/infra';
import { MemoEmbedder, openEvalEmbedder } from './embedder';

describe('the embedder every system of a run shares', () => {
  it('gives the model’s vectors, asking the model only for texts and roles it has not seen', async () => {
    const model = new HashingEmbedder({ dimensions: 64 });
    const asked: { texts: string[]; role: EmbeddingRole }[] = [];
    const cache = new MemoEmbedder({
      model: model.model,
      dimensions: model.dimensions,
      semantic: model.semantic,
      embed: (texts, role) => {
        asked.push({ texts, role });
        return model.embed(texts, role);
      },
    });
    const texts = ['the depot closes at five', '仓库五点关门', 'the depot closes at five'];
    expect(await cache.embed(texts, 'document')).toEqual(await model.embed(texts, 'document'));
    expect(await cache.embed(['仓库五点关门', 'a new text'], 'document')).toEqual(
      await model.embed(['仓库五点关门', 'a new text'], 'document'),
    );
    await cache.embed(['仓库五点关门'], 'query');
    expect(asked).toEqual([
      { texts: ['the depot closes at five', '仓库五点关门'], role: 'document' },
      { texts: ['a new text'], role: 'document' },
      { texts: ['仓库五点关门'], role: 'query' },
    ]);
    expect(cache.counts()).toEqual({ embedded: 4, remembered: 2 });
    expect({ model: cache.model, dimensions: cache.dimensions, semantic: cache.semantic }).toEqual({
      model: model.model,
      dimensions: 64,
      semantic: false,
    });
  });

  it('leaves the working directory as it was: no master.key or jwt.secret appear in a checkout', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'elma-eval-cwd-'));
    const previous = process.cwd();
    process.chdir(dir);
    try {
      const opened = await openEvalEmbedder({ ELMA_EMBEDDER: 'hashing' });
      expect((await opened.embedder.embed(['仓库五点关门'], 'query'))[0]).toHaveLength(opened.embedder.dimensions);
      await opened.close();
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      process.chdir(previous);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
