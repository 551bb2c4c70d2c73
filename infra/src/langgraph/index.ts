// The LangGraph installer is plain JavaScript (see install.mjs); this module gives it its usual import path.
export {
  LANGGRAPH_SQLITE_VERSION,
  PROJECT_LANGGRAPH_DIR,
  LanggraphUnavailable,
  langgraphEnv,
  findLanggraph,
  ensureLanggraph,
} from './install.mjs';
