import type { Config } from '../config/Config.js';
import type { ApiKeyQuote, OnchainQuote, Rail, SupportedRail } from '../contract/Quote.js';
import { ServiceError } from '../errors/ServiceError.js';

/** Millicents in one US dollar. */
export const millicentsPerUsd = 100_000;

/** The on-chain rails this server can take payment on: those with a receiving address. */
export function supportedRails(config: Config): SupportedRail[] {
  return Object.values(config.rails)
    .filter((r) => r.payTo !== undefined)
    // x402's facilitator always pays the gas; tempo's only with a fee payer configured.
    .map((r) => ({ rail: r.rail, currency: r.currency, chain: r.chain, feeSponsored: r.rail === 'x402_base' || config.rails.tempo.feePayerKey !== undefined }));
}

/** What one query costs an API-key caller, in each balance and in dollars. */
export function apiKeyQuote(config: Config): ApiKeyQuote {
  return {
    rail: 'api_key',
    costUnlocks: config.pricing.costUnlocks,
    costCredits: config.pricing.costCredits,
    costUsd: config.pricing.amountUsdMillicents / millicentsPerUsd,
  };
}

/** 503 for a rail without a receiving address, naming the setting and the rails that are configured. */
export function unavailable(config: Config, rail: Rail): ServiceError {
  const variable = rail === 'tempo' ? 'TEMPO_PAY_TO' : 'X402_BASE_PAY_TO';
  return new ServiceError('rail_unavailable', `the ${rail} rail is not configured on this server (operator: set ${variable})`, {
    details: { supportedRails: supportedRails(config) },
  });
}

/** The static on-chain price of one answer on a rail; 503 when the rail has no receiving address configured. */
export function onchainQuote(config: Config, rail: Rail): OnchainQuote {
  const r = config.rails[rail];
  if (!r.payTo) throw unavailable(config, rail);
  return { rail, amountUsdMillicents: config.pricing.amountUsdMillicents, payTo: r.payTo, currency: r.currency, chainId: r.chainId };
}
