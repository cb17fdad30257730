import type { Rail as RailName } from '../contract/Quote.js';

/**
 * What a payment is for: the request it is bound to (a digest of question, scope, mode and price), the price, and a
 * human description. A challenge carries these, and a credential for other terms is refused.
 */
export type Terms = {
  rail: RailName;
  /** SHA-256 hex of the request's canonical form: what the challenge is bound to. */
  digest: string;
  amountMillicents: number;
  /** Where the request was made (an API path or MCP endpoint), for the challenge's resource. */
  resource: string;
  description: string;
};

/** A credential as a transport found it: an HTTP header, or MCP `_meta["org.paymentauth/credential"]`. */
export type InboundCredential = { via: 'header'; name: string; value: string } | { via: 'mcp'; value: unknown };

/** A rail's challenge, rendered for each transport: HTTP headers, and the object MCP lists in `data.challenges`. */
export type Challenge = { headers: Record<string, string>; mcp: unknown };

/** A credential the rail checked: signed for these terms, unexpired, not tampered with. Nothing has moved yet, unless `paid` says so. */
export type Verified = {
  rail: RailName;
  /** The challenge it answers: a credential is spent once per challenge. */
  challengeId: string;
  /** The transfer it carries (a transaction hash, or the payer and its authorization nonce): spent once too. */
  spendKey: string;
  /** The wallet that signed it, lowercase. */
  wallet: string;
  /** Set when the payer already broadcast the transfer themselves: the money has moved, and cannot be given back. */
  paid?: { txHash: string };
  /** The rail's own parsed credential, for settle. */
  state: unknown;
};

/** A settled payment: the transaction hash (or facilitator receipt id) and the receipt the caller gets. */
export type Settlement = { txHash: string; receipt: Record<string, unknown> };

/** What the caller gets back with a paid answer: the receipt in the body, its header over REST, `_meta` over MCP. */
export type OutboundReceipt = { rail: RailName; txHash: string; receipt: Record<string, unknown>; headers: Record<string, string>; mcp: unknown };

/** Why a credential was refused; the caller gets a fresh challenge with this message. */
export class CredentialRejected extends Error {
  override name = 'CredentialRejected';
}

/**
 * A credential refused although its money already moved: a transfer the payer broadcast themselves, to this server,
 * for a challenge that has since expired or was for another request. The wallet is credited instead of losing it.
 */
export class PaidButRefused extends CredentialRejected {
  override name = 'PaidButRefused';

  constructor(
    message: string,
    readonly paid: { challengeId: string; txHash: string; wallet: string },
  ) {
    super(message);
  }
}

/**
 * A settlement whose outcome is not known: the node or facilitator did not answer (a timeout, a dropped connection)
 * after the transfer may have been sent. The payment stays "settling" until reconciliation looks it up.
 */
export class SettlementUnknown extends Error {
  override name = 'SettlementUnknown';
}

/** True when an error, or one it was caused by, is the network failing rather than a party answering "no". */
export function isTransportFailure(error: unknown): boolean {
  for (let e = error as { name?: string; message?: string; code?: string; cause?: unknown } | undefined, depth = 0; e && depth < 8; e = e.cause as typeof e, depth++) {
    if (['HttpRequestError', 'TimeoutError', 'SocketClosedError', 'AbortError', 'FacilitatorTimeoutError'].includes(e.name ?? '')) return true;
    if (e.name === 'TypeError' && e.message === 'fetch failed') return true;
    if (typeof e.code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR_)/.test(e.code)) return true;
  }
  return false;
}

/** One on-chain rail: how it asks for money, checks a credential, moves the money and says so. */
export interface PaymentRail {
  readonly rail: RailName;
  /** Whether a transport-found credential is this rail's (its header, or its shape in MCP `_meta`). */
  accepts(credential: InboundCredential): boolean;
  /** A challenge for these terms; `forCredit` asks for a signed transfer the server can decline to send (a credit pays). */
  challenge(terms: Terms, options?: { forCredit?: boolean }): Promise<Challenge>;
  /** Checks a credential against the terms without moving money; throws CredentialRejected. */
  verify(credential: InboundCredential, terms: Terms): Promise<Verified>;
  /** Moves the money (broadcasts, or has the facilitator settle); CredentialRejected when it did not, SettlementUnknown when that cannot be told. */
  settle(verified: Verified, terms: Terms): Promise<Settlement>;
  /** The receipt of a settlement, or of a credit spent instead of a transfer. */
  receipt(settlement: Settlement, terms: Terms): OutboundReceipt;
  /**
   * After a crash mid-settle: whether a transfer that may have been sent did land (its settlement), did not (null),
   * or cannot be told (undefined: the payment is then treated as settled, so the wallet is credited, never robbed).
   */
  landed(payment: { spendKey: string; wallet: string }): Promise<Settlement | null | undefined>;
}
