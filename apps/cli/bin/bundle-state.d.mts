export declare const INPUTS_FILE: string;
export declare function writeInputs(outdir: string, root: string, startedAt: number, files: Iterable<string>): void;
export declare function buildState(outdir: string, root: string): { current: true } | { current: false; reason: string };
