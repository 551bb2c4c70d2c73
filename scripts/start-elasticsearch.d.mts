/** Types of start-elasticsearch.mjs, for the TypeScript scripts that import it. */
export interface StartedElasticsearch {
  url: string;
  pid: number;
  dataDir: string;
  logFile: string;
}
export function startElasticsearch(options?: {
  version?: string;
  port?: number;
  transportPort?: number;
  data?: string;
  heap?: string;
  timeoutMs?: number;
  fastLeases?: boolean;
}): Promise<StartedElasticsearch>;
export function stopElasticsearch(pid: number, graceMs?: number): Promise<void>;
