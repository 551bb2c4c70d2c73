import { dirname, isAbsolute, join, resolve } from 'node:path';

/**
 * The folder the user typed the command in. `npx elma` and the bin run there already; `npm run elma` (and
 * `npm start`) run their script in the project's root and name the typed folder in INIT_CWD. Told apart by
 * where npm runs scripts (npm_package_json's folder): a process started elsewhere, e.g. an `elma` a test spawns
 * in a folder of its own under `npm test`, keeps its own working folder whatever INIT_CWD it inherited.
 */
export function typedIn(env: NodeJS.ProcessEnv, cwd: string): string {
  const scriptFolder = env.npm_package_json ? dirname(env.npm_package_json) : undefined;
  return env.INIT_CWD && scriptFolder === cwd ? env.INIT_CWD : cwd;
}

/**
 * Makes every relative path of the command line mean what it means in the user's shell, by running in the
 * folder the command was typed in: arguments and flags (`verify-certificate cert.pdf`, `--out`, `--to`,
 * `--data-dir`, …) and the path variables (ELMA_DATA_DIR, ELMA_ERASURE_LEDGER, ELMA_CERTIFICATE_KEYS, …) alike.
 * ELMA_DATA_DIR is then made absolute for this process and the processes it starts; unset, it is the project's
 * `.elma` folder (`projectRoot`), wherever in the project the command is typed, so that `elma token` typed in
 * `docs/` signs with the secret of the `elma start` typed in the root.
 */
export function settleInTypedFolder(projectRoot: string, env: NodeJS.ProcessEnv = process.env): void {
  let folder = typedIn(env, process.cwd());
  try {
    if (folder !== process.cwd()) process.chdir(folder);
  } catch {
    // The typed folder is gone (or not ours to enter): paths are then the script folder's, as npm left them.
    folder = process.cwd();
  }
  const dataDir = env.ELMA_DATA_DIR;
  env.ELMA_DATA_DIR = !dataDir ? join(projectRoot, '.elma') : isAbsolute(dataDir) ? dataDir : resolve(folder, dataDir);
}
