import { credentialKey } from '../contract/Payment.js';
import type { InboundCredential } from './Rail.js';

/**
 * The payment credential among HTTP request headers, whichever rail it is for: `Authorization: Payment …` (MPP) or
 * `PAYMENT-SIGNATURE` (x402 v2). Transports hand it on without reading it.
 */
export function fromHeaders(header: (name: string) => string | undefined): InboundCredential | undefined {
  const authorization = header('authorization');
  if (authorization !== undefined && /^Payment\s/i.test(authorization.trim())) return { via: 'header', name: 'authorization', value: authorization.trim() };
  const signature = header('payment-signature');
  if (signature !== undefined) return { via: 'header', name: 'payment-signature', value: signature.trim() };
  return undefined;
}

/** The payment credential in MCP request metadata (`params._meta`, or a REST body's `_meta`), if there is one. */
export function fromMeta(meta: unknown): InboundCredential | undefined {
  if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) return undefined;
  const value = (meta as Record<string, unknown>)[credentialKey];
  return value === undefined || value === null ? undefined : { via: 'mcp', value };
}
