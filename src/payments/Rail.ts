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
  /** When (ms) the transfer can no longer land: its authorization's or signed transaction's `validBefore`. */
  settleBy?: number;
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

/** What a rail asks of the payment it checks: where the transfer a credential carries is bound to a challenge. */
export type VerifyOptions = {
  /**
   * Binds a transfer (its spend key) to the challenge it is presented with, the first time it is seen; returns the
   * challenge it is bound to. Called once the challenge is known to be this server's, before any other check.
   */
  bind(spendKey: string, challengeId: string): Promise<string>;
  /**
   * Claims the transfer (its spend key) for this request, right before the rail's first round trip to a chain or a
   * facilitator: throws CredentialRejected when a payment already accounts for it, or when another request (on this
   * instance or another) is checking it right now. So a credential sent to several instances at once reaches the
   * facilitator once.
   */
  claim(spendKey: string): Promise<void>;
  /**
   * Refuses a transfer a payment already accounts for, by this server's own record, in the words a claim uses; writes
   * nothing, so it may come before the credential is known to be authentic.
   */
  unspent(spendKey: string): Promise<void>;
};

/** What a rail tells the payment while it settles. */
export type SettleHooks = {
  /** The hash of the transfer about to be broadcast, before it leaves: kept, so a crash after it can be looked up. */
  sending(txHash: string): Promise<void>;
};

/** A payment a crash left settling, as reconciliation asks its rail about it. */
export type Unsettled = { spendKey: string; wallet: string; txHash: string | null; settleBy: number | null };

/**
 * How long after a transfer's `validBefore` (by this server's clock) a chain is taken to have refused it for good, by
 * default: SETTLEMENT_LANDING_MARGIN_SECONDS sets it (a chain that finalizes in a second or two needs less).
 */
export const landingMarginMs = 60_000;

/** One on-chain rail: how it asks for money, checks a credential, moves the money and says so. */
export interface PaymentRail {
  readonly rail: RailName;
  /** Whether a transport-found credential is this rail's (its header, or its shape in MCP `_meta`). */
  accepts(credential: InboundCredential): boolean;
  /** A challenge for these terms; `reason` says why a credential was refused, where the challenge has room for it. */
  challenge(terms: Terms, options?: { reason?: string | undefined }): Promise<Challenge>;
  /** Checks a credential against the terms without moving money; throws CredentialRejected. */
  verify(credential: InboundCredential, terms: Terms, options: VerifyOptions): Promise<Verified>;
  /**
   * Moves the money (broadcasts, or has the facilitator settle), telling `hooks.sending` the transfer's hash before it
   * leaves when the rail broadcasts it; CredentialRejected when it did not move, SettlementUnknown when that cannot be
   * told.
   */
  settle(verified: Verified, terms: Terms, hooks: SettleHooks): Promise<Settlement>;
  /** The receipt of a settlement, or of a credit spent instead of a transfer. */
  receipt(settlement: Settlement, terms: Terms): OutboundReceipt;
  /**
   * After a crash or a lost answer mid-settle: whether a transfer that may have been sent did land (its settlement),
   * never will (null: it failed, or was never sent and has expired), or cannot be told yet (undefined: asked again on
   * the next pass, once its `settleBy` has passed by `marginMs` a missing transfer is null).
   */
  landed(payment: Unsettled, options: { now: number; marginMs: number }): Promise<Settlement | null | undefined>;
  /** Resolves when what the rail settles through answers as configured (its chain, its facilitator); throws why not. */
  probe(): Promise<void>;
}
