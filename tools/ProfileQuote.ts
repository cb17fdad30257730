import { z } from 'zod';
import { Rail } from '../src/contract/Quote.js';
import { ServiceError } from '../src/errors/ServiceError.js';
import * as Payer from '../src/payments/Payer.js';
import * as Pricing from '../src/payments/Pricing.js';
import { type Binding, define } from './Tool.js';

export const profileQuote = define({
  name: 'profile_quote',
  free: true,
  description: (binding: Binding) =>
    `Free, static price of one ${binding.kind === 'profile' ? `query to "${binding.slug}"` : 'query'}. With an API key: the unlock and credit cost (rail is ignored). Without one: pass rail (tempo or x402_base) for the on-chain price, receiving address, USDC contract and chain id. Optional: you may query directly.`,
  input: () => z.object({ rail: Rail.optional().describe('On-chain rail; ignored when an API key is present.') }).strict(),
  fieldErrors: { rail: 'invalid_rail' },
  unavailable: 'The quote service is unavailable. Try again shortly.',
  async run(input: { rail?: Rail }, { services, caller, profile }) {
    const verdict = await services.quoteLimiter.take(caller.rateKey);
    if (!verdict.ok) {
      services.metrics.rateLimited('quote');
      throw new ServiceError('rate_limited', `quote rate limit exceeded; retry in ${verdict.retryAfterSeconds} s`, {
        details: { resetAt: verdict.resetAt.toISOString(), retryAfter: verdict.retryAfterSeconds },
        headers: { 'Retry-After': String(verdict.retryAfterSeconds) },
      });
    }
    // Whoever pays from an account (a key, or a bearer on its own profile) is quoted the account's cost.
    if (await Payer.accountOf(services.store, caller, profile)) return Pricing.apiKeyQuote(services.config);
    if (!input.rail) {
      throw new ServiceError('missing_rail', undefined, { details: { supportedRails: Pricing.supportedRails(services.config) } });
    }
    return Pricing.onchainQuote(services.config, input.rail);
  },
});
