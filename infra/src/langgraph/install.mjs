// Plain JavaScript (types in install.d.mts, re-exported by index.ts) so that scripts/ensure-langgraph.mjs runs it
// with node alone. Only `npm run bench:peers` needs LangGraph's store; ELMA itself never runs it.
import { join } from 'node:path';
import { findRepoRoot } from '../tools/repo-root.mjs';
import { pinnedPythonTool } from '../tools/pinned-python.mjs';

/** The pinned LangGraph store (PyPI `langgraph-checkpoint-sqlite`, MIT); everything it needs is pinned in requirements.txt. */
export const LANGGRAPH_SQLITE_VERSION = '3.1.2';
const REPO = findRepoRoot();

/** Where `ensureLanggraph` installs the packages: `<repo>/.tools/langgraph` (git-ignored), run with PYTHONPATH set to it. */
export const PROJECT_LANGGRAPH_DIR = join(REPO, '.tools', 'langgraph');

/**
 * Environment of every Python that imports LangGraph: LangSmith tracing (which would send runs off the machine)
 * is off whatever the caller's environment says.
 * @param {string} _home
 * @returns {Record<string, string>}
 */
export function langgraphEnv(_home) {
  return {
    LANGSMITH_TRACING: 'false',
    LANGCHAIN_TRACING_V2: 'false',
    PYTHONPATH: PROJECT_LANGGRAPH_DIR,
    PYTHONDONTWRITEBYTECODE: '1',
  };
}

/** No Python (or no pip) on this machine: LangGraph cannot be installed here. */
export class LanggraphUnavailable extends Error {
  code = 'BENCH.LANGGRAPH_UNAVAILABLE';
}

const tool = pinnedPythonTool({
  name: 'langgraph',
  label: "LangGraph's SqliteStore",
  distribution: 'langgraph-checkpoint-sqlite',
  version: LANGGRAPH_SQLITE_VERSION,
  requirements: join(REPO, 'scripts', 'langgraph', 'requirements.txt'),
  dir: PROJECT_LANGGRAPH_DIR,
  importCheck: 'langgraph.store.sqlite',
  env: langgraphEnv,
  unavailable: LanggraphUnavailable,
  howToRetry: 'node scripts/ensure-langgraph.mjs',
});

/**
 * The project-local LangGraph store when it is installed at the pinned version and requirements, without
 * installing anything; undefined otherwise.
 * @returns {{ dir: string; python: string; version: string } | undefined}
 */
export const findLanggraph = () => tool.find();

/**
 * Returns the project-local LangGraph store, installing the pinned requirements into `.tools/langgraph` with pip
 * when it is missing or stale (about 60 MB). Throws LanggraphUnavailable when there is no Python with pip, Error
 * when pip fails or the package does not import at the pinned version.
 * @returns {Promise<{ dir: string; python: string; version: string }>}
 */
export const ensureLanggraph = () => tool.ensure();
