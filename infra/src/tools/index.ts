// The plain-JavaScript installers' helpers (see pip-install.mjs), with their usual import path for TypeScript.
export { pipInstallTarget } from './pip-install.mjs';
export { findRepoRoot } from './repo-root.mjs';
export type { PinnedPythonInstall } from './pinned-python.mjs';
