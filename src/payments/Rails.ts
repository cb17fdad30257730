import crypto from 'node:crypto';
import type { Config } from '../config/Config.js';
import type { Rail } from '../contract/Quote.js';
import type { Store } from '../store/Store.js';
import type { PaymentRail } from './Rail.js';

/** The on-chain rails this server takes payment on, built on first use (their libraries load only then). */
export type Rails = {
  /** The rails with a receiving address. */
  configured(): Rail[];
  /** A configured rail, or undefined. */
  get(rail: Rail): Promise<PaymentRail | undefined>;
};

/**
 * The secret challenges are bound with: PAYMENT_SECRET, or (outside production) one generated on first use and kept
 * in the database, so challenges survive a restart. Never logged.
 */
export async function secretOf(config: Config, store: Store): Promise<string> {
  if (config.payments.secret) return config.payments.secret;
  return (await store.meta.get('payment_secret')) ?? store.meta.claim('payment_secret', crypto.randomBytes(32).toString('hex'));
}

export function fromConfig(config: Config, store: Store): Rails {
  const built = new Map<Rail, Promise<PaymentRail>>();
  const configured = (): Rail[] => (['tempo', 'x402_base'] as const).filter((r) => config.rails[r].payTo !== undefined);
  const get = (rail: Rail): Promise<PaymentRail | undefined> => {
    if (!configured().includes(rail)) return Promise.resolve(undefined);
    let found = built.get(rail);
    if (!found) {
      found = secretOf(config, store).then((secret) =>
        rail === 'tempo'
          ? import('./rails/Tempo.js').then((m) => m.create({ config: config.rails.tempo, secret, ttlSeconds: config.payments.challengeTtlSeconds }))
          : import('./rails/X402Base.js').then((m) => m.create({ config: config.rails.x402_base, secret, ttlSeconds: config.payments.challengeTtlSeconds })),
      );
      built.set(rail, found);
    }
    return found;
  };
  return { configured, get };
}
