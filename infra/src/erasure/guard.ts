import { ContentErased, factText, type MemoryContent } from '@elma/domain';
import type { ErasureFingerprints } from './fingerprints';
import type { Tombstones } from './tombstones';

/** The write-side check of re-derivation tombstones, shared by ingest and explicit writes. */
export class ErasureGuard {
  constructor(private readonly deps: { tombstones: Tombstones; fingerprints: ErasureFingerprints }) {}

  /** True when this content was erased for this subject (consolidation skips it rather than fail). */
  async isErased(tenant: string, subject: string, content: MemoryContent): Promise<boolean> {
    try {
      await this.refuseErased(tenant, [{ path: 'content', subject, content }]);
      return false;
    } catch (error) {
      if (error instanceof ContentErased) return true;
      throw error;
    }
  }

  /** Throws `ContentErased` (naming the first offending path) when any item's content was erased for its subject. */
  async refuseErased(tenant: string, items: { path: string; subject: string; content: MemoryContent }[]): Promise<void> {
    const candidates = items.flatMap((item) => {
      const texts = [item.content.text, ...(item.content.fact ? [factText(item.content.fact)] : [])];
      return texts.map((text) => ({ path: item.path, fingerprint: this.deps.fingerprints.tombstone(tenant, item.subject, text) }));
    });
    const erased = await this.deps.tombstones.matching(
      tenant,
      candidates.map((c) => c.fingerprint),
    );
    const hit = candidates.find((c) => erased.has(c.fingerprint));
    if (hit) throw new ContentErased(hit.path);
  }
}
