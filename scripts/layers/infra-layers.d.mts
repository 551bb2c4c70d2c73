export type Kind = 'adapter' | 'application' | 'shared' | 'root' | 'test';
export declare const INFRA_FILES: Array<[prefix: string, kind: Kind, target: string]>;
export declare const ALLOWED: Record<Kind, Kind[]>;
export declare function kindOf(path: string): { kind: Kind; target: string } | undefined;
