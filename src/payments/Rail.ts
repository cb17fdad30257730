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

/** One on-chain rail: how it asks for money, checks a credential, moves the money and says so. */
export interface PaymentRail {
  readonly rail: RailName;
  /** True when the payer's gas is paid for them (a fee payer, or the facilitator). */
  readonly feeSponsored: boolean;
  /** Whether a transport-found credential is this rail's (its header, or its shape in MCP `_meta`). */
  accepts(credential: InboundCredential): boolean;
  challenge(terms: Terms): Promise<Challenge>;
  /** Checks a credential against the terms without moving money; throws CredentialRejected. */
  verify(credential: InboundCredential, terms: Terms): Promise<Verified>;
  /** Moves the money (broadcasts, or has the facilitator settle); throws when it did not move. */
  settle(verified: Verified, terms: Terms): Promise<Settlement>;
  /** The receipt of a settlement, or of a credit spent instead of a transfer. */
  receipt(settlement: Settlement, terms: Terms): OutboundReceipt;
  /**
   * After a crash mid-settle: whether a transfer that may have been sent did land (its settlement), did not (null),
   * or cannot be told (undefined: the payment is then treated as settled, so the wallet is credited, never robbed).
   */
  landed(payment: { spendKey: string; wallet: string }): Promise<Settlement | null | undefined>;
}
