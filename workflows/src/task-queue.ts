/** The one task queue ELMA's worker polls; client and worker both import it from here. */
export const ELMA_TASK_QUEUE = 'elma';
