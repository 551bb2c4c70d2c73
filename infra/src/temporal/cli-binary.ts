// The Temporal CLI locator is plain JavaScript (see cli-binary.mjs); this module gives it its usual import path.
export {
  TEMPORAL_CLI_PACKAGE,
  PROJECT_TEMPORAL_DIR,
  PROJECT_TEMPORAL_CLI,
  findTemporalCli,
  ensureTemporalCli,
  temporalCliVersion,
} from './cli-binary.mjs';
