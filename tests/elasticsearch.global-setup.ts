/**
 * For `npm run test:e2e:elasticsearch`: without ELMA_E2E_ELASTICSEARCH_URL the API suites would quietly run on
 * the embedded index, so the run stops at once; so it does when no Elasticsearch answers there. Prints which
 * server the suites use.
 */
export default async function setup(): Promise<void> {
  const url = process.env.ELMA_E2E_ELASTICSEARCH_URL;
  const start =
    'start a test node with eval "$(node scripts/start-elasticsearch.mjs)", then run ELMA_E2E_ELASTICSEARCH_URL=$ELMA_ELASTICSEARCH_URL npm run test:e2e:elasticsearch';
  if (!url) throw new Error(`ELMA_E2E_ELASTICSEARCH_URL is not set: these suites run with the index on Elasticsearch only; ${start}`);
  const shown = url.replace(/\/\/[^@/]*@/, '//***@');
  let version: string;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    version = ((await response.json()) as { version?: { number?: string } }).version?.number ?? 'unknown version';
  } catch (error) {
    throw new Error(`no Elasticsearch answers at ${shown} (${error instanceof Error ? error.message : String(error)}); ${start}`);
  }
  process.stderr.write(`[elma] API end-to-end suites with the index on Elasticsearch ${version} at ${shown}\n`);
}
