// `node scripts/ensure-mem0.mjs`: installs the evaluation's Mem0 baseline (PyPI mem0ai, pinned with its requirements
// in scripts/mem0/requirements.txt) into .tools/mem0 unless it is already there, and prints where. Not a postinstall:
// only `npm run eval` and CI's eval stage need it (about 200 MB). Exits 1, saying why, when it cannot be installed
// (no Python 3.10+ with pip, pip failed); the B5 row then says "not run" with that reason.
try {
  const { ensureMem0 } = await import('../infra/src/mem0/install.mjs');
  const mem0 = await ensureMem0();
  console.log(`Mem0 ${mem0.version} at ${mem0.dir} (Python ${mem0.python})`);
} catch (err) {
  process.stderr.write(`[elma] Mem0 not available: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
