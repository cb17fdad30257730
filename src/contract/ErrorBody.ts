import { z } from 'zod';
import { SupportedRail } from './Quote.js';

/** Every error the service returns. Extra properties are allowed. */
export const ErrorBody = z
  .object({
    error: z.string(),
    message: z.string().optional(),
    resetAt: z.string().datetime().optional(),
    supportedRails: z.array(SupportedRail).optional(),
    /** The id of the request this answers (its X-Request-Id): what to quote when reporting it. */
    requestId: z.string().optional(),
  })
  .passthrough();
export type ErrorBody = z.infer<typeof ErrorBody>;
