/** Types of pinned-python.mjs, for the TypeScript that imports it. */
export interface PinnedPythonInstall {
  dir: string;
  python: string;
  version: string;
}
export declare function pinnedPythonTool(spec: {
  name: string;
  label: string;
  distribution: string;
  version: string;
  requirements: string;
  dir: string;
  importCheck: string;
  env: (dir: string) => Record<string, string>;
  unavailable: new (message: string) => Error;
  howToRetry: string;
}): { find(): PinnedPythonInstall | undefined; ensure(): Promise<PinnedPythonInstall> };
