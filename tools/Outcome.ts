import { toServiceError } from '../src/errors/ServiceError.js';

/** How a call that threw ended, for its log line and the metrics: asked to pay, refused as asked (a 4xx), or failed. */
export function outcomeOf(thrown: unknown): 'challenged' | 'unanswered' | 'refused' | 'failed' {
  const error = toServiceError(thrown);
  if (error.code === 'payment_required') return 'challenged';
  if (error.code === 'no_relevant_content') return 'unanswered';
  return error.status < 500 ? 'refused' : 'failed';
}
