import { z } from 'zod';
import { ErrorBody } from './ErrorBody.js';
import { Rail } from './Quote.js';

/** Where MCP carries a payment credential (request `_meta`) and a receipt (result `_meta`). */
export const credentialKey = 'org.paymentauth/credential';
export const receiptKey = 'org.paymentauth/receipt';

/** An MPP challenge (tempo), as MCP lists it in `data.challenges`; the same one `WWW-Authenticate` carries. */
export const MppChallenge = z
  .object({ id: z.string(), realm: z.string(), method: z.literal('tempo'), intent: z.string(), request: z.record(z.unknown()) })
  .passthrough();

/** An x402 v2 PaymentRequired object (x402_base); the same one `PAYMENT-REQUIRED` carries, base64. */
export const X402PaymentRequired = z.object({ x402Version: z.literal(2), accepts: z.array(z.record(z.unknown())).min(1), error: z.string().optional() }).passthrough();

/** One item of `data.challenges` (MCP) and of the 402 body's `challenges` (REST). */
export const PaymentChallenge = z.union([MppChallenge, X402PaymentRequired]);
export type PaymentChallenge = z.infer<typeof PaymentChallenge>;

/** The Error body of a 402 `payment_required`: the rails this server takes, and the challenge to pay. */
export const PaymentRequiredBody = ErrorBody.extend({ error: z.literal('payment_required'), challenges: z.array(PaymentChallenge).min(1) });
export type PaymentRequiredBody = z.infer<typeof PaymentRequiredBody>;

/** An MPP receipt (tempo): what `Payment-Receipt` carries and MCP returns in `_meta`. */
export const MppReceipt = z.object({ method: z.literal('tempo'), status: z.literal('success'), reference: z.string(), timestamp: z.string() }).passthrough();

/** An x402 settlement response (x402_base): what `PAYMENT-RESPONSE` carries, base64, and MCP returns in `_meta`. */
export const X402Settlement = z.object({ success: z.literal(true), transaction: z.string(), network: z.string() }).passthrough();

/** A paid answer's receipt as MCP returns it: result `_meta["org.paymentauth/receipt"]`. */
export const ReceiptMeta = z.object({ [receiptKey]: z.union([MppReceipt, X402Settlement]) }).passthrough();

/** How each rail's challenge and credential travel over HTTP. */
export const httpHeaders = {
  tempo: { challenge: 'WWW-Authenticate', credential: 'Authorization: Payment', receipt: 'Payment-Receipt' },
  x402_base: { challenge: 'PAYMENT-REQUIRED', credential: 'PAYMENT-SIGNATURE', receipt: 'PAYMENT-RESPONSE' },
} as const satisfies Record<Rail, { challenge: string; credential: string; receipt: string }>;

/** The rail a 402's challenge headers are for (header names match whatever their case). */
export function railOfChallenge(headers: Record<string, string>): Rail | undefined {
  const names = new Set(Object.keys(headers).map((name) => name.toLowerCase()));
  return Rail.options.find((rail) => names.has(httpHeaders[rail].challenge.toLowerCase()));
}

/** The JSON Schemas of the payment headers' values, as the OpenAPI document publishes them. */
export const headerSchemas = {
  /** Standard base64 (RFC 4648 §4), padded, of a JSON text: how x402 v2 sends its objects in headers. */
  base64Json: { type: 'string', contentEncoding: 'base64', contentMediaType: 'application/json', pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$' },
  /** URL-safe base64 (RFC 4648 §5), unpadded, of a JSON text: how MPP sends its receipt. */
  base64UrlJson: { type: 'string', contentEncoding: 'base64url', contentMediaType: 'application/json', pattern: '^[A-Za-z0-9_-]+$' },
  /** An auth scheme's quoted parameters (RFC 9110 §11.2), as MPP writes a challenge: `name="value"`, joined by ", ". */
  paymentChallenge: { type: 'string', pattern: '^Payment [A-Za-z]+="(?:[^"\\\\]|\\\\.)*"(?:, [A-Za-z]+="(?:[^"\\\\]|\\\\.)*")*$' },
};
