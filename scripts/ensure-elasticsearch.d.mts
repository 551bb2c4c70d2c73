/** Types of ensure-elasticsearch.mjs, for the TypeScript scripts that import it. */
export interface EsRecipe {
  major: number;
  jdk: { release: number; min: number; max?: number };
  jvmArgs: string[];
}
export const DEFAULT_ES_VERSION: string;
export const RECIPES: Record<string, EsRecipe>;
export const ES_TOOLS_DIR: string;
export function recipeOf(version: string): EsRecipe;
export function findJdk(range: { min: number; max?: number }, env?: NodeJS.ProcessEnv): string;
/** The home folder of a ready test node of this version, built first when missing or stale. */
export function ensureElasticsearch(version?: string, env?: NodeJS.ProcessEnv): string;
/** Builds the index inspector of the erasure proof into `<home>/inspector/` unless current; returns `home`. */
export function ensureInspector(home: string): string;
