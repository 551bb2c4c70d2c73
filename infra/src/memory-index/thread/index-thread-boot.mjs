// Starts the index thread from the TypeScript sources (under tsx or vitest): a worker thread does not inherit
// the loader that runs them, so it registers tsx's before it imports the thread's module. The built bundle
// starts its own index-thread.mjs instead (scripts/build.mjs).
import { workerData } from 'node:worker_threads';

const { register } = await import('tsx/esm/api');
register();
await import(workerData.entry);
