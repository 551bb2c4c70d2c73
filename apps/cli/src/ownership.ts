import { claimDataDir, type ElmaConfig } from '@elma/infra';

/**
 * Takes the data folder for this process when it opens an embedded engine
 * (SQLite event log or index), which only one process may own. The
 * production engines are shared by design (`elma api` beside `elma worker`);
 * the key vault they share is a SQLite file that its own locking protects.
 */
export function claimEmbeddedEngines(config: ElmaConfig, command: string, ports: Record<string, number>) {
  if (config.eventLog !== 'sqlite' && config.index !== 'sqlite') return undefined;
  return claimDataDir(config.dataDir, { command, ports });
}
