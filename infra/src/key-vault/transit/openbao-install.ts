// The OpenBao installer is plain JavaScript (see openbao-install.mjs); this module gives it its usual import path.
export {
  OPENBAO_VERSION,
  OPENBAO_PACKAGE,
  PROJECT_OPENBAO_DIR,
  OpenBaoUnavailable,
  findOpenBao,
  ensureOpenBao,
  type OpenBaoInstall,
} from './openbao-install.mjs';
