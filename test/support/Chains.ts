import { afterAll, beforeAll } from 'vitest';
import { createClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { tempoModerato } from 'viem/chains';
import { Challenge, Credential } from 'mppx';
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client';
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import * as BoundExactScheme from '../../src/client/BoundExactScheme.js';
import * as Sandbox from '../../src/sandbox/Sandbox.js';
import * as Environment from './Environment.js';

/** A sandbox (stand-in Tempo node, local EVM with USDC, x402 facilitator) and a server pointed at it, for a test file. */
export function useChains(overrides: Record<string, string> = {}, options: { feePayer?: boolean } = {}) {
  let sandbox: Sandbox.Sandbox | undefined;
  let environment: Environment.Environment | undefined;
  let http_: Awaited<ReturnType<typeof Environment.serve>> | undefined;
  beforeAll(async () => {
    sandbox = await Sandbox.start({ feePayer: options.feePayer });
    environment = await Environment.create({ ...sandbox.environment, ...overrides });
    http_ = await Environment.serve(environment);
  }, 60_000);
  afterAll(async () => {
    await http_?.close();
    await environment?.close();
    await sandbox?.close();
  });
  return {
    get sandbox() {
      return sandbox!;
    },
    get environment() {
      return environment!;
    },
    get url() {
      return http_!.url;
    },
  };
}

/** A viem client on the sandbox's Tempo node, as the mppx client takes it. */
/**
 * How long a test's client waits for a stand-in chain: the chains run in the test's own process, and under a burst of
 * paid requests they answer late, not never (viem's default, 10 s, is for a remote node that may be gone).
 */
const rpcTimeoutMs = 60_000;

export function tempoGetClient(sandbox: Sandbox.Sandbox) {
  return ({ chainId }: { chainId?: number | undefined }) => createClient({ chain: { ...tempoModerato, id: chainId ?? sandbox.tempo.chainId }, transport: http(sandbox.tempo.url, { timeout: rpcTimeoutMs }) });
}

/** The mppx client's fetch, paying tempo challenges from a wallet key. */
export function tempoFetch(sandbox: Sandbox.Sandbox, key: `0x${string}`, mode?: 'pull' | 'push') {
  const client = MppxClient.create({
    methods: [tempoClient.charge({ account: privateKeyToAccount(key), getClient: tempoGetClient(sandbox), ...(mode && { mode }) })],
    polyfill: false,
  });
  return client.fetch.bind(client) as typeof fetch;
}

/**
 * The x402 client for a wallet key, allowed to spend the sandbox's USDC: with `@x402/evm`'s own exact scheme, which
 * picks a random nonce (what every stock x402 payer signs, and the server takes by default), or the one bound to the
 * challenge's nonce (`src/client/BoundExactScheme.ts`, which X402_NONCE_BINDING=required asks for).
 */
export function x402Payer(sandbox: Sandbox.Sandbox, key: `0x${string}`, scheme: 'bound' | 'stock' = 'stock'): x402Client {
  const client = new x402Client();
  const network = `eip155:${sandbox.base.chainId}` as const;
  if (scheme === 'bound') client.register(network, BoundExactScheme.create(privateKeyToAccount(key)));
  else registerExactEvmScheme(client, { signer: privateKeyToAccount(key), networks: [network] });
  client.setSpendControls({ allowedAssets: [{ network: `eip155:${sandbox.base.chainId}`, asset: sandbox.base.usdc.address, maxAmountPerPayment: '1000000' }] });
  return client;
}

/** @x402/fetch, paying x402 challenges from a wallet key. */
export function x402Fetch(sandbox: Sandbox.Sandbox, key: `0x${string}`, scheme: 'bound' | 'stock' = 'stock') {
  return wrapFetchWithPayment(fetch, x402Payer(sandbox, key, scheme));
}

/** A rail's payment headers for one unpaid response, made by that rail's real client, without sending them. */
export async function credentialFor(sandbox: Sandbox.Sandbox, rail: 'tempo' | 'x402_base', unpaid: Response, key: `0x${string}`, mode?: 'pull' | 'push', scheme: 'bound' | 'stock' = 'stock'): Promise<Record<string, string>> {
  if (rail === 'tempo') {
    const client = MppxClient.create({
      methods: [tempoClient.charge({ account: privateKeyToAccount(key), getClient: tempoGetClient(sandbox), ...(mode && { mode }) })],
      polyfill: false,
    });
    return { authorization: await client.createCredential(unpaid) };
  }
  const client = new x402HTTPClient(x402Payer(sandbox, key, scheme));
  const required = client.getPaymentRequiredResponse((name) => unpaid.headers.get(name));
  return client.encodePaymentSignatureHeader(await client.createPaymentPayload(required));
}

/**
 * A rail's credential for a challenge an MCP server listed in `data.challenges`, made by that rail's real client, as
 * it goes in `_meta["org.paymentauth/credential"]`: tempo's as the mppx credential object, x402's as its payload.
 */
export async function mcpCredentialFor(sandbox: Sandbox.Sandbox, rail: 'tempo' | 'x402_base', challenge: unknown, key: `0x${string}`): Promise<unknown> {
  if (rail === 'x402_base') return x402Payer(sandbox, key).createPaymentPayload(challenge as never);
  const client = MppxClient.create({ methods: [tempoClient.charge({ account: privateKeyToAccount(key), getClient: tempoGetClient(sandbox) })], polyfill: false });
  const unpaid = new Response(null, { status: 402, headers: { 'WWW-Authenticate': Challenge.serialize(challenge as never) } });
  return Credential.deserialize(await client.createCredential(unpaid));
}
