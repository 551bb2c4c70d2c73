// The Mem0 installer is plain JavaScript (see install.mjs); this module gives it its usual import path.
export {
  MEM0_VERSION,
  MEM0_BRIDGE,
  PROJECT_MEM0_DIR,
  Mem0Unavailable,
  mem0Env,
  findMem0,
  ensureMem0,
  type Mem0Install,
} from './install.mjs';
