import type { Store } from '../store/Store.js';
import type { OutboundReceipt } from './Rail.js';

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

/**
 * Who pays for a query, chosen before any work. A payment that reads `relevant` (on-chain: no challenge and no
 * settlement when nothing relevant was found) authorizes its hold once preflight retrieval has run; one that does not
 * (a balance's debit, given back when nothing relevant was found) is authorized while retrieval runs.
 */
export type Payment = {
  readsRelevance: boolean;
  authorize(input: { queryId: string; memo: string; relevant: boolean }): Promise<Hold>;
};
