/** Types of install.mjs, for the TypeScript that imports it. */
import type { PinnedPythonInstall } from '../tools/pinned-python.mjs';
export const LANGGRAPH_SQLITE_VERSION: string;
export const PROJECT_LANGGRAPH_DIR: string;
export function langgraphEnv(home: string): Record<string, string>;
export class LanggraphUnavailable extends Error {
  code: 'BENCH.LANGGRAPH_UNAVAILABLE';
}
export function findLanggraph(): PinnedPythonInstall | undefined;
export function ensureLanggraph(): Promise<PinnedPythonInstall>;
