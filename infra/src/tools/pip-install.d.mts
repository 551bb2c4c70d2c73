/**
 * Installs `pkg` into the folder `target` (`pip install --target`) with the first Python that has pip and after
 * whose install `accept` finds what it needs. `failures` has a line per Python that failed; `anyPip` says whether
 * any Python had pip at all (without one the tool is unavailable rather than broken).
 */
export declare function pipInstallTarget<T>(
  target: string,
  pkg: string | string[],
  accept: (python: string) => { ok: true; value: T } | { ok: false; failure: string },
  options?: { announce?: boolean; pipArgs?: string[] },
): Promise<{ ok: true; python: string; value: T } | { ok: false; failures: string[]; anyPip: boolean }>;
