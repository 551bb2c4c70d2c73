import { z } from 'zod';
import { MemoryContent, MemoryKind, Purpose, RetentionClass, Sensitivity } from './record';

const IsoDate = z.iso.datetime({ offset: true });

/** `POST /v1/memories`: an explicit memory, which must name the events it was learnt from. */
export const WriteMemoryRequest = z.strictObject({
  kind: MemoryKind.default('semantic'),
  content: MemoryContent,
  sourceEventIds: z.array(z.uuid()).min(1).max(100),
  subject: z.string().min(1).max(200).optional(),
  sensitivity: Sensitivity.default('internal'),
  purposes: z.array(Purpose).min(1).max(20).optional(),
  validFrom: IsoDate.optional(),
  validTo: IsoDate.optional(),
  confidence: z.number().min(0).max(1).default(0.8),
  retention: RetentionClass.default('standard'),
  idempotencyKey: z.string().min(1).max(200).optional(),
  /**
   * An explicit correction (roles admin, dpo or reviewer): it prevails over
   * any fact it contradicts, whatever their sources, times or confidences.
   */
  correction: z.boolean().optional(),
  /**
   * Optimistic concurrency on the memory's stream: the version the caller
   * believes is current (0: the memory must not exist yet). A mismatch is a
   * `EVENT_LOG.WRONG_EXPECTED_VERSION` conflict and nothing is written.
   */
  expectedVersion: z.number().int().min(0).optional(),
});
export type WriteMemoryRequest = z.infer<typeof WriteMemoryRequest>;
