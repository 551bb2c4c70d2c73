import type { Logger } from '@elma/shared';
import type { Problem } from './problem';

/**
 * Logs the server errors the API answers. An unexpected one (500) is logged
 * every time. A known state answered with its stable code (a full disk,
 * Temporal down, a quarantined tenant) is logged as a warning once per code
 * and interval, with how many were passed over since: under traffic a full
 * disk would otherwise write a line per request, onto the disk that is full.
 */
export function serverErrorLog(logger: Logger, intervalMs = 10_000, now: () => number = Date.now) {
  const last = new Map<string, { at: number; passedOver: number }>();
  return (problem: Problem, fields: Record<string, unknown>): void => {
    if (problem.status === 500) return logger.error('request failed', fields);
    const seen = last.get(problem.code);
    if (seen && now() - seen.at < intervalMs) {
      seen.passedOver += 1;
      return;
    }
    last.set(problem.code, { at: now(), passedOver: 0 });
    logger.warn('request refused', {
      ...fields,
      status: problem.status,
      code: problem.code,
      ...(seen ? { passedOverSinceLast: seen.passedOver } : {}),
    });
  };
}

/**
 * What a log line may say of an unexpected error: its class, its code and
 * where it was thrown. Never its message, which can quote the request.
 */
export function causeOf(error: unknown): { name?: string; cause?: string; at?: string } {
  const e = error as { name?: unknown; code?: unknown; stack?: unknown } | undefined;
  const frame = typeof e?.stack === 'string' ? /\n\s+at (?:.* \()?(\S+?:\d+:\d+)\)?/.exec(e.stack)?.[1] : undefined;
  return {
    ...(typeof e?.name === 'string' ? { name: e.name } : {}),
    ...(typeof e?.code === 'string' ? { cause: e.code } : {}),
    ...(frame ? { at: frame.replace(/^.*\/(?=(apps|infra|domain|activities|workflows|node_modules)\/)/, '') } : {}),
  };
}
