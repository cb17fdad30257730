/**
 * The paying side, for `profile-edge ask`: a wallet that answers a 402 with the rail's own client library, the mppx
 * client for tempo and the x402 client (`@x402/fetch`, the exact EVM scheme bound to the challenge) for x402_base,
 * after checking the price
 * against a cap. The only module that imports those clients.
 */
import { decodePaymentResponseHeader, x402Client, x402HTTPClient } from '@x402/fetch';
import { Receipt } from 'mppx';
import { Mppx, tempo } from 'mppx/client';
import { createClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { tempo as tempoMainnet, tempoModerato } from 'viem/chains';
import type { Rail } from '../contract/Quote.js';
import * as BoundExactScheme from './BoundExactScheme.js';

export type Wallet = {
  address: string;
  /** Payment headers for a 402 from a rail's challenge; refuses a price over `maxUsd`. */
  pay(unpaid: Response, rail: Rail): Promise<Record<string, string>>;
};

/** A payment refused before anything was signed: a price over the cap, or a 402 without the rail's challenge. */
export class PaymentDeclined extends Error {
  override name = 'PaymentDeclined';
}

/** The price a 402's Error body asks for, in US dollars (the challenge's base units, 6 decimals). */
function priceUsd(body: { challenges?: unknown[] }, rail: Rail): number | undefined {
  const challenge = body.challenges?.[0] as { request?: { amount?: string }; accepts?: { amount?: string }[] } | undefined;
  const amount = rail === 'tempo' ? challenge?.request?.amount : challenge?.accepts?.[0]?.amount;
  return amount === undefined || !/^\d+$/.test(amount) ? undefined : Number(amount) / 1_000_000;
}

/** The chain a tempo challenge pays on, when it says. */
function chainOf(body: { challenges?: unknown[] }): number | undefined {
  const chainId = (body.challenges?.[0] as { request?: { methodDetails?: { chainId?: unknown } } } | undefined)?.request?.methodDetails?.chainId;
  return typeof chainId === 'number' && Number.isSafeInteger(chainId) ? chainId : undefined;
}

/**
 * The Tempo node the wallet signs through answers, and serves the chain the challenge pays on: otherwise the payer is
 * told which URL (TEMPO_RPC_URL) and which chain, rather than a library's "HTTP request failed".
 */
async function checkTempoNode(rpcUrl: string, expected: number, getClient: (options: { chainId?: number }) => ReturnType<typeof createClient>): Promise<void> {
  let served: number;
  try {
    served = Number(await getClient({}).request({ method: 'eth_chainId' }));
  } catch (error) {
    const cause = (error as { details?: unknown }).details ?? ((error as Error).cause as Error | undefined)?.message ?? (error as Error).message;
    throw new PaymentDeclined(`cannot reach the Tempo node at ${rpcUrl} (TEMPO_RPC_URL), which should serve chain ${expected}: ${String(cause).split('\n')[0]}`);
  }
  if (served !== expected) throw new PaymentDeclined(`the Tempo node at ${rpcUrl} (TEMPO_RPC_URL) serves chain ${served}, not chain ${expected} this payment is on: point TEMPO_RPC_URL at a node of chain ${expected}`);
}

export function create(input: { privateKey: `0x${string}`; maxUsd: number; tempo: { rpcUrl: string; chainId: number } }): Wallet {
  const account = privateKeyToAccount(input.privateKey);
  const chain = input.tempo.chainId === tempoMainnet.id ? tempoMainnet : tempoModerato;
  const getClient = ({ chainId }: { chainId?: number | undefined }) => createClient({ chain: { ...chain, id: chainId ?? input.tempo.chainId }, transport: http(input.tempo.rpcUrl) });
  return {
    address: account.address,
    async pay(unpaid, rail) {
      const body = (await unpaid.clone().json().catch(() => ({}))) as { challenges?: unknown[] };
      const price = priceUsd(body, rail);
      if (price === undefined) throw new PaymentDeclined(`the server's 402 carries no ${rail} challenge this wallet can read`);
      if (price > input.maxUsd) throw new PaymentDeclined(`the server asks ${price} USD, over the ${input.maxUsd} USD cap (--max-usd)`);
      if (rail === 'tempo') {
        await checkTempoNode(input.tempo.rpcUrl, chainOf(body) ?? input.tempo.chainId, getClient);
        const client = Mppx.create({ methods: [tempo.charge({ account, getClient })], polyfill: false });
        return { authorization: await client.createCredential(unpaid) };
      }
      const required = body.challenges![0] as { accepts: { network: `${string}:${string}`; asset: string }[] };
      const { network, asset } = required.accepts[0]!;
      // Signs the nonce the challenge announces, so the authorization pays for this question and no other.
      const client = new x402Client().register(network, BoundExactScheme.create(account));
      client.setSpendControls({ allowedAssets: [{ network, asset, maxAmountPerPayment: String(Math.round(input.maxUsd * 1_000_000)) }] });
      const http402 = new x402HTTPClient(client);
      return http402.encodePaymentSignatureHeader(await http402.createPaymentPayload(http402.getPaymentRequiredResponse((name) => unpaid.headers.get(name), body)));
    },
  };
}

/** A paid response's receipt header, decoded: `Payment-Receipt` (tempo) or `PAYMENT-RESPONSE` (x402). */
export function receiptOf(response: Response): Record<string, unknown> | undefined {
  const mpp = response.headers.get('payment-receipt');
  if (mpp) return { ...Receipt.deserialize(mpp) };
  const x402 = response.headers.get('payment-response');
  if (x402) return { ...decodePaymentResponseHeader(x402) };
  return undefined;
}

