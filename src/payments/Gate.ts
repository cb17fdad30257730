import type { Caller } from '../auth/Caller.js';
import type { Config } from '../config/Config.js';
import type { PaymentMode, QueryRequest } from '../contract/Query.js';
import type { Logger } from '../log/Logger.js';
import type { Metrics } from '../health/Metrics.js';
import type { Breakers } from '../health/Breaker.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { Store } from '../store/Store.js';
import type { Profile } from '../store/Profiles.js';
import * as Balance from './Balance.js';
import * as Onchain from './Onchain.js';
import * as Payer from './Payer.js';
import * as Pricing from './Pricing.js';
import type { InboundCredential, OutboundReceipt } from './Rail.js';
import type { Rails } from './Rails.js';
import * as Terms from './Terms.js';

/** Where a query is served (the tool binding). */
type Binding = { kind: 'global' } | { kind: 'profile'; slug: string };

/** What a paid answer was charged as, in the response's `charge` field. */
export type ChargeKind = 'unlock' | 'credits' | 'onchain';

/** Money set aside for one answer: moved when the answer is ready and has relevant content, given back otherwise. */
export type Hold = {
  charge: ChargeKind;
  /** The answer is ready: move the money (on-chain: the transfer; a balance was debited by the hold). Returns the receipt, if any. */
  settle(): Promise<OutboundReceipt | undefined>;
  /** The answer is given: the payment stands. `tx` is the transaction that credits the creators: both land, or neither. */
  capture(tx: Store): Promise<void>;
  /** No answer worth paying for, or the query failed: the payment is undone (or credited, if it moved), and the record says why. */
  release(reason: string): Promise<void>;
};

/** Who pays for a query, chosen before any work: it authorizes a hold once preflight retrieval has run. */
export type Payment = { authorize(input: { queryId: string; memo: string; relevant: boolean }): Promise<Hold> };

/**
 * The payment gate's first step: who pays. An account (an API key, or a bearer on its own profile) pays from its
 * balance in `paymentMode`, whatever rail or credential came with it (SPEC 5.3); a caller without one pays on-chain on
 * the `rail` they name; anyone else is refused here, before scope or retrieval, with what to send instead.
 */
export async function payerFor(input: {
  store: Store;
  config: Config;
  logger: Logger;
  metrics?: Metrics | undefined;
  /** The outside parties' breakers: a rail's facilitator or RPC failing again and again is skipped for a while. */
  breakers?: Breakers | undefined;
  rails: Rails;
  caller: Caller;
  profile: Profile | undefined;
  request: QueryRequest;
  served: Binding;
  credential: InboundCredential | undefined;
  /** The serving process taking the payment, when it holds a lease (see Instance). */
  instance: string | undefined;
}): Promise<Payment> {
  const { store, config, caller, profile, request } = input;
  const accountId = await Payer.accountOf(store, caller, profile);
  if (!accountId) {
    if (request.rail) {
      const terms = Terms.of({ rail: request.rail, served: input.served, request, amountMillicents: config.pricing.amountUsdMillicents });
      return Onchain.payment({ ...input, rail: request.rail, terms, breaker: input.breakers?.[request.rail] });
    }
    throw new ServiceError(
      'api_key_required',
      caller.bearer
        ? 'a bearer token pays only for queries on the endpoints of a profile its account owns or is a team member of; send a service-api-key header with paymentMode, or pay on-chain without the bearer token'
        : 'profile_query needs a payment: an API key (the service-api-key header; PROFILE_EDGE_API_KEY for stdio) with paymentMode (unlocks or credits), or rail (tempo or x402_base) to pay on-chain per query',
      { details: { supportedRails: Pricing.supportedRails(config) } },
    );
  }
  if (!request.paymentMode) {
    throw new ServiceError('missing_payment_mode', caller.apiKey ? undefined : 'paymentMode (unlocks or credits) is required: the query is charged to your account.');
  }
  const mode: PaymentMode = request.paymentMode;
  return { authorize: ({ queryId, memo }) => Balance.hold({ store, config, accountId, mode, queryId, memo, instance: input.instance }) };
}
