// `node scripts/ensure-langgraph.mjs`: installs LangGraph's SqliteStore (PyPI langgraph-checkpoint-sqlite, pinned with
// its requirements in scripts/langgraph/requirements.txt) into .tools/langgraph unless it is already there, and
// prints where. Not a postinstall: only `npm run bench:peers` and CI's eval stage need it. Exits 1, saying why, when
// it cannot be installed (no Python 3.10+ with pip, pip failed).
try {
  const { ensureLanggraph } = await import('../infra/src/langgraph/install.mjs');
  const installed = await ensureLanggraph();
  console.log(`LangGraph store ${installed.version} at ${installed.dir} (Python ${installed.python})`);
} catch (err) {
  process.stderr.write(`[elma] LangGraph not available: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
