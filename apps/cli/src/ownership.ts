import { claimDataDir, tidyDataDir, type ElmaConfig } from '@elma/infra';

/**
 * Takes the data folder for this process when it opens an embedded engine
 * (SQLite event log or index), which only one process may own; claiming it
 * removes what a process killed inside the folder left (a restore's staging...).
 * The production engines are shared by design (`elma api` beside `elma
 * worker`; the key vault they share is a SQLite file that its own locking
 * protects): those leftovers are removed when no process holds the folder.
 */
export function claimEmbeddedEngines(config: ElmaConfig, command: string, ports: Record<string, number>) {
  if (config.eventLog !== 'sqlite' && config.index !== 'sqlite') {
    tidyDataDir(config.dataDir);
    return undefined;
  }
  return claimDataDir(config.dataDir, { command, ports });
}
