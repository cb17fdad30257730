import type { Caller } from '../auth/Caller.js';
import type { Store } from '../store/Store.js';
import type { Profile } from '../store/Profiles.js';
import type { Binding } from '../contract/Binding.js';
import type { Config } from '../config/Config.js';
import type { PaymentMode, QueryRequest } from '../contract/Query.js';
import type { Logger } from '../log/Logger.js';
import type { Metrics } from '../health/Metrics.js';
import type { Breakers } from '../health/Breaker.js';
import { ServiceError } from '../errors/ServiceError.js';
import * as AccountPayment from './AccountPayment.js';
import type { Payment } from './Hold.js';
import * as OnchainPayment from './OnchainPayment.js';
import * as Pricing from './Pricing.js';
import type { InboundCredential } from './Rail.js';
import type { Rails } from './Rails.js';
import * as Terms from './Terms.js';

/**
 * The account a query is charged to: the API key's owner; without a key, on a profile's own endpoint, the bearer
 * token's account when it owns the profile or is on its team (their own profile, charged to them). Undefined when
 * nobody with an account pays.
 */
export async function accountOf(store: Store, caller: Caller, profile: Profile | undefined): Promise<string | undefined> {
  if (caller.apiKey) return caller.apiKey.accountId;
  if (caller.bearer && profile && (await store.profiles.isTeam(profile, caller.bearer.accountId))) return caller.bearer.accountId;
  return undefined;
}

/**
 * Who pays for a query. An account (an API key, or a bearer on its own profile) pays from its
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
  /** What a challenge names as the resource paid for, where not the REST path (MCP: the tool). */
  resource?: string | undefined;
  /** The serving process taking the payment, when it holds a lease (see Instance). */
  instance: string | undefined;
  /** The payments whose settlement this process is waiting on: its own reconciliation leaves them to the call. */
  settling?: Set<string> | undefined;
}): Promise<Payment> {
  const { store, config, caller, profile, request } = input;
  const accountId = await accountOf(store, caller, profile);
  if (!accountId) {
    if (request.rail) {
      const terms = Terms.of({ rail: request.rail, served: input.served, request, amountMillicents: config.pricing.amountUsdMillicents, resource: input.resource });
      return OnchainPayment.payment({ ...input, rail: request.rail, terms, breaker: input.breakers?.[request.rail] });
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
  return { readsRelevance: false, authorize: ({ queryId, memo }) => AccountPayment.hold({ store, config, accountId, mode, queryId, memo, instance: input.instance }) };
}
