/**
 * Everything an on-chain payment touches, on 127.0.0.1: a stand-in Tempo node, a local EVM chain with a USDC
 * stand-in, and an x402 facilitator, with a funded throwaway payer wallet. `environment` points a server at them.
 * Tests and `profile-edge sandbox` use the same one.
 */
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Addresses } from 'viem/tempo';
import * as BaseChain from './BaseChain.js';
import * as Facilitator from './Facilitator.js';
import * as TempoNode from './TempoNode.js';

/** Tempo's testnet (Moderato) chain id; its test stablecoin pathUSD is both the currency and the fee token. */
const tempoChainId = 42431;
/** A local chain id for the Base stand-in, passed as X402_BASE_CHAIN_ID. */
const baseChainId = 1337;

export type Sandbox = {
  tempo: TempoNode.TempoNode;
  base: BaseChain.BaseChain;
  facilitator: Facilitator.Facilitator;
  /** The throwaway payer: its private key and address, funded on both chains. */
  payer: { key: Hex; address: Address };
  /** Where each rail's payments go. */
  payTo: { tempo: Address; x402_base: Address };
  /** The server settings that point it at this sandbox. */
  environment: Record<string, string>;
  /** The payer's balance (base units, 6 decimals) on a rail, or any holder's. */
  balance(rail: 'tempo' | 'x402_base', holder?: Address): Promise<bigint>;
  /** A new funded payer wallet (its key). */
  newPayer(usd?: number): Promise<{ key: Hex; address: Address }>;
  close(): Promise<void>;
};

const units = (usd: number): bigint => BigInt(Math.round(usd * 1_000_000));

/** A stand-in that could not listen on the port asked for: which one, where, and why. */
export class PortTaken extends Error {
  constructor(
    readonly what: string,
    readonly port: number,
    readonly code: string,
  ) {
    super(`the sandbox's ${what} cannot listen on 127.0.0.1:${port} (${code})`);
  }
}

/**
 * Starts the three stand-ins, each on a free port, or from `port` on: the Tempo node on it, the Base chain on the
 * next, the facilitator on the one after (PortTaken names the one that could not listen; those started are closed).
 */
export async function start(options: { payerUsd?: number; feePayer?: boolean; port?: number } = {}): Promise<Sandbox> {
  const pathUsd = Addresses.pathUsd;
  const at = (offset: number) => (options.port === undefined ? undefined : options.port + offset);
  const started: { close(): Promise<void> }[] = [];
  const closeStarted = () => Promise.all(started.map((s) => s.close().catch(() => undefined)));
  const listening = async <T extends { close(): Promise<void> }>(what: string, offset: number, begin: () => Promise<T>): Promise<T> => {
    try {
      const service = await begin();
      started.push(service);
      return service;
    } catch (error) {
      await closeStarted();
      const code = [(error as { code?: unknown }).code, String((error as Error)?.message)].map((c) => /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL)\b/.exec(String(c))?.[1]).find(Boolean);
      if (options.port !== undefined && code !== undefined) throw new PortTaken(what, at(offset)!, code);
      throw error;
    }
  };
  const tempo = await listening('Tempo node', 0, () =>
    TempoNode.start({ chainId: tempoChainId, tokens: { [pathUsd]: { name: 'pathUSD', symbol: 'pathUSD', decimals: 6, currency: 'USD' } }, port: at(0) }),
  );
  const base = await listening('Base chain', 1, () => BaseChain.start({ chainId: baseChainId, port: at(1) }));
  const facilitator = await listening('x402 facilitator', 2, () => Facilitator.start({ rpcUrl: base.rpcUrl, chainId: baseChainId, gasKey: base.gasKey, port: at(2) }));
  const feePayerKey = generatePrivateKey();
  tempo.fund(pathUsd, privateKeyToAccount(feePayerKey).address, units(1_000));
  const payTo = { tempo: privateKeyToAccount(generatePrivateKey()).address, x402_base: privateKeyToAccount(generatePrivateKey()).address };
  const newPayer = async (usd = options.payerUsd ?? 10) => {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address;
    tempo.fund(pathUsd, address, units(usd));
    await base.mint(address, units(usd));
    return { key, address };
  };
  // Nothing is left listening when the wallets cannot be funded either.
  const payer = await newPayer().catch(async (error: unknown) => {
    await closeStarted();
    throw error;
  });
  return {
    tempo,
    base,
    facilitator,
    payer,
    payTo,
    environment: {
      TEMPO_NETWORK: 'testnet',
      TEMPO_PAY_TO: payTo.tempo,
      TEMPO_CURRENCY: pathUsd,
      TEMPO_RPC_URL: tempo.url,
      ...(options.feePayer !== false && { TEMPO_FEE_PAYER_KEY: feePayerKey }),
      X402_BASE_NETWORK: 'sepolia',
      X402_BASE_CHAIN_ID: String(baseChainId),
      X402_BASE_RPC_URL: base.rpcUrl,
      X402_BASE_PAY_TO: payTo.x402_base,
      X402_BASE_CURRENCY: base.usdc.address,
      X402_BASE_CURRENCY_NAME: base.usdc.name,
      X402_BASE_CURRENCY_VERSION: base.usdc.version,
      X402_FACILITATOR_URL: facilitator.url,
    },
    balance: async (rail, holder = payer.address) => (rail === 'tempo' ? tempo.balanceOf(pathUsd, holder) : await base.balanceOf(holder)),
    newPayer,
    async close() {
      await facilitator.close();
      await base.close();
      await tempo.close();
    },
  };
}
