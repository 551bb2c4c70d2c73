/**
 * Structured logging. Fields are ids, counts and codes only: log lines are
 * outside erasure's reach, so memory content and event payloads never go here.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 } as const;

export function createLogger(level: keyof typeof LEVELS = 'info', name = 'elma'): Logger {
  const threshold = LEVELS[level];
  const write = (lvl: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < threshold) return;
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: lvl, name, msg: message, ...fields })}\n`);
  };
  return {
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
