/** The one task queue ELMA's worker polls for erasure, retention and reindex; client and worker both import it from here. */
export const ELMA_TASK_QUEUE = 'elma';

/**
 * Consolidation runs on a task queue of its own, polled by a worker that runs
 * one consolidation activity at a time: background work that can always wait
 * must not take the cores (and event loop) that recall, ingest and erasure need.
 */
export function consolidationTaskQueue(taskQueue: string = ELMA_TASK_QUEUE): string {
  return `${taskQueue}-consolidation`;
}
