import type { Config } from '../config/Config.js';
import type { PaymentMode } from '../contract/Query.js';
import type { Database } from '../store/Database.js';
import * as Charging from './Charging.js';
import type { Hold } from './Gate.js';

/**
 * An account balance as a payer: the hold is the debit itself (402 `insufficient_balance` when it would overdraw),
 * capturing keeps it, and releasing writes the reversal row, so the ledger shows both.
 */
export function hold(input: { db: Database; config: Config; accountId: string; mode: PaymentMode; queryId: string; memo: string }): Hold {
  const { db, config, accountId, mode, queryId } = input;
  Charging.charge(db, { config, accountId, mode, queryId, memo: input.memo });
  return {
    charge: mode === 'unlocks' ? 'unlock' : 'credits',
    // The debit above was the payment itself.
    settle: async () => undefined,
    capture: () => Charging.markAnswered(db, { accountId, queryId }),
    release: (reason) => void Charging.reverse(db, { accountId, queryId, reason }),
  };
}
