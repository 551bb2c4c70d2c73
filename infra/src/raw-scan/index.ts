import type { RawStoreScan } from '@elma/domain';
import { listFiles, scanFiles } from './byte-scan';

export * from './byte-scan';

/** The RawStoreScan port over the child-process byte scan. */
export const rawStoreScan: RawStoreScan = { listFiles, scanFiles };
