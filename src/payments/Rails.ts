import crypto from 'node:crypto';
import type { Config } from '../config/Config.js';
import type { Rail } from '../contract/Quote.js';
import type { Database } from '../store/Database.js';
import * as Store from '../store/Database.js';
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
export function secretOf(config: Config, db: Database): string {
  if (config.payments.secret) return config.payments.secret;
  const kept = Store.getMeta(db, 'payment_secret');
  if (kept) return kept;
  const made = crypto.randomBytes(32).toString('hex');
  db.prepare(`INSERT INTO meta (key, value) VALUES ('payment_secret', ?) ON CONFLICT (key) DO NOTHING`).run(made);
  return Store.getMeta(db, 'payment_secret')!;
}

export function fromConfig(config: Config, db: Database): Rails {
  const built = new Map<Rail, Promise<PaymentRail>>();
  const configured = (): Rail[] => (['tempo', 'x402_base'] as const).filter((r) => config.rails[r].payTo !== undefined);
  const get = (rail: Rail): Promise<PaymentRail | undefined> => {
    if (!configured().includes(rail)) return Promise.resolve(undefined);
    let found = built.get(rail);
    if (!found) {
      const secret = secretOf(config, db);
      found =
        rail === 'tempo'
          ? import('./rails/Tempo.js').then((m) => m.create({ config: config.rails.tempo, secret, ttlSeconds: config.payments.challengeTtlSeconds }))
          : import('./rails/X402Base.js').then((m) => m.create({ config: config.rails.x402_base, secret, ttlSeconds: config.payments.challengeTtlSeconds }));
      built.set(rail, found);
    }
    return found;
  };
  return { configured, get };
}
