import type { Config } from '../config/Config.js';
import type { PaymentMode } from '../contract/Query.js';
import type { Store } from '../store/Store.js';
import * as Charging from './Charging.js';
import type { Hold } from './Hold.js';

/**
 * An account balance as a payer: the hold is the debit itself (402 `insufficient_balance` when it would overdraw),
 * capturing keeps it, and releasing writes the reversal row, so the ledger shows both.
 */
export async function hold(input: { store: Store; config: Config; accountId: string; mode: PaymentMode; queryId: string; memo: string; instance?: string | undefined }): Promise<Hold> {
  const { store, config, accountId, mode, queryId } = input;
  await Charging.charge(store, { config, accountId, mode, queryId, memo: input.memo, instance: input.instance });
  return {
    charge: mode === 'unlocks' ? 'unlock' : 'credits',
    // The debit above was the payment itself.
    settle: async () => undefined,
    capture: (tx) => Charging.markAnswered(tx, { accountId, queryId }),
    // Ahead of requests waiting for the database: a burst must not leave the charge standing for reconciliation.
    release: async (reason) => void (await Charging.reverse(store.urgent, { accountId, queryId, reason })),
  };
}
