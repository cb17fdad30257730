import type { Config } from '../config/Config.js';
import { ServiceError } from '../errors/ServiceError.js';
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
  try {
    await Charging.charge(store, { config, accountId, mode, queryId, memo: input.memo, instance: input.instance });
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'insufficient_balance') throw await shortOf(store, config, accountId, mode);
    throw error;
  }
  return {
    charge: mode === 'unlocks' ? 'unlock' : 'credits',
    // The debit above was the payment itself.
    settle: async () => undefined,
    capture: (tx) => Charging.markAnswered(tx, { accountId, queryId }),
    // Ahead of requests waiting for the database: a burst must not leave the charge standing for reconciliation.
    release: async (reason) => void (await Charging.reverse(store.urgent, { accountId, queryId, reason })),
  };
}

/**
 * A balance that does not cover a query, said so the caller knows what it costs, what the account holds, and what to
 * do: pay from the other balance, or have an operator add to this one (the account is the caller's own).
 */
async function shortOf(store: Store, config: Config, accountId: string, mode: PaymentMode): Promise<ServiceError> {
  const account = await store.accounts.get(accountId);
  const unit = mode === 'unlocks' ? 'unlocks' : 'credits';
  const cost = mode === 'unlocks' ? config.pricing.costUnlocks : config.pricing.costCredits;
  const other = mode === 'unlocks' ? { unit: 'credits', cost: config.pricing.costCredits, held: account.creditBalance } : { unit: 'unlocks', cost: config.pricing.costUnlocks, held: account.unlockBalance };
  const held = mode === 'unlocks' ? account.unlockBalance : account.creditBalance;
  const instead = other.held >= other.cost ? ` Its ${other.unit} cover it: send paymentMode ${other.unit}.` : '';
  return new ServiceError(
    'insufficient_balance',
    `This query costs ${cost} ${cost === 1 ? unit.slice(0, -1) : unit}, and account "${account.name}" holds ${held}.${instead} An operator adds to the balance with \`profile-edge credits grant ${account.name} --${unit} N\`.`,
  );
}
