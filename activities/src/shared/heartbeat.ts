import { Context } from '@temporalio/activity';

/** How often a running activity reports that its worker is alive; Temporal batches these (throttled by the SDK). */
export const HEARTBEAT_EVERY_MS = 1_000;

/**
 * Runs an activity body while heartbeating on a timer. The heartbeat timeout
 * the workflow sets is what lets Temporal notice a dead worker (SIGKILL,
 * OOM) within seconds and retry the step elsewhere; without heartbeats it
 * would wait for the whole start-to-close timeout. The body must yield to
 * the event loop now and then (long synchronous work starves the timer).
 * Outside an activity (a unit test calling the function) it just runs the body.
 */
export async function heartbeating<T>(body: () => Promise<T>): Promise<T> {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return body();
  }
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await body();
  } finally {
    clearInterval(timer);
  }
}
