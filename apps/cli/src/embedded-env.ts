import { freePort } from '@elma/infra';

/**
 * The environment of an `elma start` on its own data folder and free ports,
 * with a Temporal dev server of its own: an address or database file of
 * another Temporal server in this environment is left out.
 */
export async function embeddedStartEnv(dataDir: string, logLevel = 'warn'): Promise<{ env: NodeJS.ProcessEnv; port: number; temporalPort: number }> {
  const port = await freePort();
  const temporalPort = await freePort([port]);
  const uiPort = await freePort([port, temporalPort]);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ELMA_DATA_DIR: dataDir,
    ELMA_PORT: String(port),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    ELMA_LOG_LEVEL: logLevel,
  };
  delete env.TEMPORAL_ADDRESS;
  delete env.ELMA_TEMPORAL_DB_FILE;
  return { env, port, temporalPort };
}
