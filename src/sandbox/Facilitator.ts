/**
 * An x402 facilitator on 127.0.0.1, for tests and `profile-edge sandbox`: @x402/core's facilitator with @x402/evm's
 * exact scheme, paying gas from a key on the given chain, served over HTTP with the endpoints HTTPFacilitatorClient
 * calls (GET /supported, POST /verify, POST /settle). The only module that imports the facilitator side of x402.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { type Hex, createWalletClient, defineChain, http as viemHttp, nonceManager, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

export type Facilitator = {
  url: string;
  /** How many settlements it has broadcast. */
  settlements(): number;
  /** How many verifications it was asked for. */
  verifications(): number;
  close(): Promise<void>;
};

export async function start(options: { rpcUrl: string; chainId: number; gasKey: Hex; port?: number }): Promise<Facilitator> {
  const chain = defineChain({ id: options.chainId, name: 'local-base', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [options.rpcUrl] } } });
  // Concurrent settlements from one account need viem's nonce manager, or they race for the same nonce.
  const account = privateKeyToAccount(options.gasKey, { nonceManager });
  // A loopback chain under a burst of settlements answers slowly rather than not at all: viem's 10 s default timeout
  // would turn a queued broadcast into a failed settlement, so the sandbox waits as long as a payment stays valid.
  const transport = viemHttp(options.rpcUrl, { timeout: 120_000 });
  const wallet = createWalletClient({ account, chain, transport, pollingInterval: 50, cacheTime: 0 }).extend(publicActions);
  // Ganache estimates gas by tracing every step of the call, queued with mining: a burst of settlements waits seconds
  // on it. A transfer with authorization needs under 100k gas, so the sandbox states a limit instead of estimating.
  const client = { ...wallet, writeContract: (args: Parameters<typeof wallet.writeContract>[0]) => wallet.writeContract({ ...args, gas: 300_000n }) };
  const signer = toFacilitatorEvmSigner({ ...(client as unknown as Parameters<typeof toFacilitatorEvmSigner>[0]), address: account.address });
  const facilitator = new x402Facilitator().register([`eip155:${options.chainId}`], new ExactEvmScheme(signer));
  let settled = 0;
  let verified = 0;
  // Settlements go out one at a time: when one account's transactions reach ganache 7.9 out of nonce order, it can
  // leave a nonce queued for good (ganache#4522), and every later settlement from that account then hangs.
  let line: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const turn = line.then(work, work);
    line = turn.catch(() => undefined);
    return turn;
  };

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
      void (async () => {
        try {
          if (req.method === 'GET' && req.url === '/supported') return send(200, facilitator.getSupported());
          if (req.method !== 'POST' || (req.url !== '/verify' && req.url !== '/settle')) return send(404, { error: 'not found' });
          const { paymentPayload, paymentRequirements } = JSON.parse(Buffer.concat(parts).toString('utf8'));
          if (req.url === '/verify') {
            verified += 1;
            return send(200, await facilitator.verify(paymentPayload, paymentRequirements));
          }
          const result = await inTurn(() => facilitator.settle(paymentPayload, paymentRequirements));
          if (result.success) settled += 1;
          // A refusal is an answer (200); the raw message holds node details the resource server need not see.
          const { errorMessage: _detail, ...rest } = result;
          return send(200, rest);
        } catch (error) {
          return send(500, { error: error instanceof Error ? error.message : String(error) });
        }
      })();
    });
  });
  // A port in use (or not allowed) fails the start, rather than an 'error' event nobody listens for.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    settlements: () => settled,
    verifications: () => verified,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
