import type { Request } from 'express';
import { httpHeaders, railOfChallenge } from '../../contract/Payment.js';
import { type ServiceError, toErrorBody } from '../../errors/ServiceError.js';
import * as Credentials from '../../payments/Credentials.js';
import type { InboundCredential } from '../../payments/Rail.js';
import type { Wire } from '../Call.js';

/** An HTTP response to write: status, headers and a JSON body. */
export type Reply = { status: number; headers: Record<string, string>; body: unknown };

/** A 402 says how to pay over HTTP: the challenge's header, and the header the credential goes back in. */
function explained(error: ServiceError): ServiceError {
  const rail = error.code === 'payment_required' ? railOfChallenge(error.headers) : undefined;
  if (!rail) return error;
  const { challenge, credential } = httpHeaders[rail];
  return error.withMessage(`${error.message} Pay the challenge in the ${challenge} header (also in challenges) and retry the same request with ${credential}.`);
}

/** The payment credential among the request's headers: `Authorization: Payment …` (MPP) or `PAYMENT-SIGNATURE` (x402). */
export function credentialOf(req: Request): InboundCredential | undefined {
  return Credentials.fromHeaders((name) => req.get(name));
}

/** REST: the payload as the body, a receipt in its header; a failure as the Error body with its status and headers. */
export const wire: Wire<Reply> = {
  badCredentials: 'refuse',
  result: (payload, { receipt }) => ({ status: 200, headers: receipt?.headers ?? {}, body: payload }),
  failure: (error) => {
    const shown = explained(error);
    return { status: shown.status, headers: shown.headers, body: toErrorBody(shown) };
  },
};
