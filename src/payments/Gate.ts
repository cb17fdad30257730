import type { Caller } from '../auth/Caller.js';
import type { Config } from '../config/Config.js';
import type { PaymentMode, QueryRequest } from '../contract/Query.js';
import { ServiceError } from '../errors/ServiceError.js';
import type { Database } from '../store/Database.js';
import type { Profile } from '../store/Profiles.js';
import * as Balance from './Balance.js';
import * as Payer from './Payer.js';

/** What a paid answer was charged as, in the response's `charge` field. */
export type ChargeKind = 'unlock' | 'credits' | 'onchain';

/** Money set aside for one answer: kept when the answer has relevant content, given back otherwise. */
export type Hold = {
  charge: ChargeKind;
  /** The answer was given: the payment stands (call it in the transaction that credits the creators). */
  capture(): void;
  /** No answer worth paying for, or the query failed: the payment is undone, and the ledger says why. */
  release(reason: string): void;
};

/** Who pays for a query, chosen before any work: it authorizes a hold once preflight retrieval has run. */
export type Payment = { authorize(input: { queryId: string; memo: string }): Hold };

/**
 * The payment gate's first step: who pays. An account (an API key, or a bearer on its own profile) pays from its
 * balance in `paymentMode`; anyone else is refused here, before scope or retrieval, with what to send instead.
 */
export function payerFor(input: { db: Database; config: Config; caller: Caller; profile: Profile | undefined; request: Pick<QueryRequest, 'paymentMode' | 'rail'> }): Payment {
  const { db, config, caller, profile, request } = input;
  const accountId = Payer.accountOf(db, caller, profile);
  if (!accountId) {
    throw new ServiceError(
      'api_key_required',
      caller.bearer
        ? 'a bearer token pays only for queries on the endpoints of a profile its account owns or is a team member of; send a service-api-key header with paymentMode'
        : request.rail
          ? `on-chain payment (${request.rail}) is not available on this server yet; send an API key (the service-api-key header) with paymentMode`
          : 'profile_query needs an API key (the service-api-key header; PROFILE_EDGE_API_KEY for stdio) and paymentMode (unlocks or credits)',
    );
  }
  if (!request.paymentMode) {
    throw new ServiceError('missing_payment_mode', caller.apiKey ? undefined : 'paymentMode (unlocks or credits) is required: the query is charged to your account.');
  }
  const mode: PaymentMode = request.paymentMode;
  return { authorize: ({ queryId, memo }) => Balance.hold({ db, config, accountId, mode, queryId, memo }) };
}
