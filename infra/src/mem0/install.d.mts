/** Types of install.mjs, for the TypeScript that imports it. */
export const MEM0_VERSION: string;
export const MEM0_BRIDGE: string;
export const PROJECT_MEM0_DIR: string;
export function mem0Env(home: string): Record<string, string>;
export class Mem0Unavailable extends Error {
  code: 'EVAL.MEM0_UNAVAILABLE';
}
export interface Mem0Install {
  dir: string;
  python: string;
  version: string;
}
export function findMem0(): Mem0Install | undefined;
export function ensureMem0(): Promise<Mem0Install>;
