import { z } from 'zod';

export const Rail = z.enum(['tempo', 'x402_base']);
export type Rail = z.infer<typeof Rail>;

/** The whole body is optional; `rail` is needed only for on-chain price metadata. */
export const QuoteRequest = z.object({ rail: Rail.optional() }).strict();
export type QuoteRequest = z.infer<typeof QuoteRequest>;

export const SupportedRail = z
  .object({ rail: Rail, currency: z.string(), chain: z.string().optional(), feeSponsored: z.boolean() })
  .strict();
export type SupportedRail = z.infer<typeof SupportedRail>;

export const OnchainQuote = z
  .object({
    rail: Rail,
    amountUsdMillicents: z.number().int().describe('fixed answer price in USD millicents; divide by 100000 for USD'),
    payTo: z.string(),
    currency: z.string().describe('rail-specific USDC contract address'),
    chainId: z.number().int(),
  })
  .strict();
export type OnchainQuote = z.infer<typeof OnchainQuote>;

export const ApiKeyQuote = z
  .object({
    rail: z.literal('api_key'),
    costUnlocks: z.number().int(),
    costCredits: z.number().int(),
    costUsd: z.number(),
  })
  .strict();
export type ApiKeyQuote = z.infer<typeof ApiKeyQuote>;

export const QuoteResponse = z.union([OnchainQuote, ApiKeyQuote]);
export type QuoteResponse = z.infer<typeof QuoteResponse>;
