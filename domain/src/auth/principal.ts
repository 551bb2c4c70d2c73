import { z } from 'zod';
import { Purpose, Sensitivity } from '../memory/record';

/** Who is calling, as asserted by a verified token. The tenant comes from here only, never from a request body. */
export const Principal = z.object({
  tenant: z.string().regex(/^[a-z0-9][a-z0-9_]{0,62}$/, 'tenant ids are lower-case letters, digits and underscores'),
  sub: z.string().min(1).max(200),
  roles: z.array(z.string().min(1)).default([]),
  purposes: z.array(Purpose).default([]),
  clearance: Sensitivity.default('internal'),
  /** ABAC attributes asserted by the token, when the issuer has them. */
  department: z.string().min(1).max(200).optional(),
  project: z.string().min(1).max(200).optional(),
});
export type Principal = z.infer<typeof Principal>;
