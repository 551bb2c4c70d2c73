// Root `postinstall`: fetch the Temporal CLI so `npm test` and `npm start` can run a local dev server.
// The logic lives once, in infra/src/temporal/cli-binary.mjs: plain JavaScript, so this runs with node alone,
// also in an install without dev dependencies (`npm ci --omit=dev`). Never fails the install: without the CLI
// you can still point TEMPORAL_ADDRESS at a server, and the test setup retries the install with a clear error.
// Set ELMA_SKIP_TEMPORAL_CLI=1 to skip (e.g. production images that talk to a Temporal cluster).

if (process.env.ELMA_SKIP_TEMPORAL_CLI === '1') {
  process.exit(0);
}

try {
  const { ensureTemporalCli, temporalCliVersion } = await import('../infra/src/temporal/cli-binary.mjs');
  const cli = await ensureTemporalCli();
  process.stderr.write(`[elma] ${temporalCliVersion(cli)} at ${cli}\n`);
} catch (err) {
  process.stderr.write(`[elma] warning: Temporal CLI not available (${err instanceof Error ? err.message : String(err)})\n`);
}
