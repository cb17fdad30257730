/**
 * A stand-in Tempo node on 127.0.0.1: just enough of Tempo's JSON-RPC for MPP payments (mppx's tempo client and
 * server, through viem), for tests and `profile-edge sandbox`. Balances of TIP-20 tokens live in memory. Signed Tempo
 * transactions (type 0x76) are really decoded; the sender's signature and a fee payer's co-signature are recovered
 * and checked, as are the chain id, the validity window and the nonce; the fee is charged in a TIP-20 fee token; and
 * `transfer` / `transferWithMemo` calls are applied all or nothing, with genuine Transfer and TransferWithMemo logs.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Secp256k1 } from 'ox';
import type { SignatureEnvelope} from 'ox/tempo';
import { TxEnvelopeTempo } from 'ox/tempo';
import {
  type Address,
  type Hex,
  decodeFunctionData,
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionResult,
  getAddress,
  isAddressEqual,
  keccak256,
  maxUint256,
  numberToHex,
  toHex,
  zeroAddress,
} from 'viem';
import { Abis, Addresses, Transaction } from 'viem/tempo';

export type Token = { name: string; symbol: string; decimals: number; currency: string };

export type TempoNode = {
  url: string;
  chainId: number;
  balanceOf(token: string, holder: string): bigint;
  /** Mints `amount` base units of a token to a holder. */
  fund(token: string, holder: string, amount: bigint): void;
  /** How many transactions were applied (sent to this node and mined). */
  transactionCount(): number;
  close(): Promise<void>;
};

type Log = { address: Address; topics: Hex[]; data: Hex };
type Balances = Map<string, Map<string, bigint>>;
type Call = { to?: string; data?: Hex; value?: unknown };

/** A failed call inside a transaction or a simulation: reverts, answered as JSON-RPC error 3. */
class Revert extends Error {}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const emptyBloom = `0x${'00'.repeat(256)}` as Hex;
const zeroHash = `0x${'00'.repeat(32)}` as Hex;
/** Tempo prices gas in attodollars (1e-18 USD); its USD tokens have 6 decimals. */
const attoPerTokenUnit = 10n ** 12n;
/** Tempo's expiring nonces: nonce key 2^256-1, nonce 0, valid for at most 30 seconds. */
const expiringNonceKey = maxUint256;
const maxExpiringWindowSeconds = 30n;

const bigintOf = (v: unknown): bigint => (v === undefined || v === null || v === '0x' || v === '' ? 0n : BigInt(v as string));
const now = (): bigint => BigInt(Math.floor(Date.now() / 1000));

export async function start(options: { chainId: number; tokens: Record<string, Token>; baseFeePerGas?: bigint; port?: number }): Promise<TempoNode> {
  const { chainId } = options;
  const baseFeePerGas = options.baseFeePerGas ?? 20_000_000_000n;
  const tokens = new Map(Object.entries(options.tokens).map(([address, token]) => [address.toLowerCase(), token]));
  let balances: Balances = new Map([...tokens.keys()].map((t) => [t, new Map()]));
  const nonces = new Map<string, bigint>();
  const expiring = new Map<string, bigint>();
  const receipts = new Map<string, Record<string, unknown>>();
  let blockNumber = 1n;
  const blocks = new Map<bigint, { hash: Hex; timestamp: bigint }>([[0n, { hash: keccak256(toHex('genesis')), timestamp: now() - 1n }], [1n, { hash: keccak256(toHex('block-1')), timestamp: now() }]]);

  const balanceOf = (state: Balances, token: string, holder: string) => state.get(token.toLowerCase())?.get(holder.toLowerCase()) ?? 0n;
  const setBalance = (state: Balances, token: string, holder: string, amount: bigint) => {
    const holders = state.get(token.toLowerCase()) ?? new Map<string, bigint>();
    holders.set(holder.toLowerCase(), amount);
    state.set(token.toLowerCase(), holders);
  };
  const copy = (state: Balances): Balances => new Map([...state].map(([t, m]) => [t, new Map(m)]));

  /** Runs TIP-20 transfers from `sender` against `state`, returning their logs; throws Revert on the first failure. */
  function execute(state: Balances, sender: string, calls: Call[]): Log[] {
    const logs: Log[] = [];
    calls.forEach((call, i) => {
      const token = call.to?.toLowerCase();
      if (!token || !tokens.has(token)) throw new Revert(`call ${i}: ${call.to} is not a known TIP-20 token`);
      if (bigintOf(call.value) !== 0n) throw new Revert(`call ${i}: TIP-20 calls carry no value`);
      let decoded;
      try {
        decoded = decodeFunctionData({ abi: Abis.tip20, data: call.data ?? '0x' });
      } catch {
        throw new Revert(`call ${i}: unreadable calldata`);
      }
      if (decoded.functionName !== 'transfer' && decoded.functionName !== 'transferWithMemo') throw new Revert(`call ${i}: ${decoded.functionName} is not supported`);
      const [to, amount, memo] = decoded.args as readonly [Address, bigint, Hex?];
      const held = balanceOf(state, token, sender);
      if (held < amount) throw new Revert(`call ${i}: InsufficientBalance(${held}, ${amount})`);
      setBalance(state, token, sender, held - amount);
      setBalance(state, token, to, balanceOf(state, token, to) + amount);
      const data = encodeAbiParameters([{ type: 'uint256' }], [amount]);
      logs.push({ address: getAddress(token), topics: encodeEventTopics({ abi: Abis.tip20, eventName: 'Transfer', args: { from: sender as Address, to } }) as Hex[], data });
      if (memo !== undefined) {
        logs.push({ address: getAddress(token), topics: encodeEventTopics({ abi: Abis.tip20, eventName: 'TransferWithMemo', args: { from: sender as Address, to, memo } }) as Hex[], data });
      }
    });
    return logs;
  }

  const intrinsicGas = (calls: Call[]): bigint => calls.reduce((gas, c) => gas + 30_000n + BigInt(c.data ? (c.data.length - 2) / 2 : 0) * 16n, 21_000n);

  function block(n: bigint) {
    const b = blocks.get(n);
    if (!b) return null;
    return {
      number: numberToHex(n),
      hash: b.hash,
      parentHash: blocks.get(n - 1n)?.hash ?? zeroHash,
      nonce: '0x0000000000000000',
      sha3Uncles: zeroHash,
      logsBloom: emptyBloom,
      transactionsRoot: zeroHash,
      stateRoot: zeroHash,
      receiptsRoot: zeroHash,
      miner: zeroAddress,
      difficulty: '0x0',
      totalDifficulty: '0x0',
      extraData: '0x',
      size: '0x100',
      gasLimit: numberToHex(30_000_000n),
      gasUsed: '0x0',
      timestamp: numberToHex(b.timestamp),
      transactions: [],
      uncles: [],
      baseFeePerGas: numberToHex(baseFeePerGas),
      mixHash: zeroHash,
    };
  }

  /** The sender of a signed envelope, recovered from its signature (never taken from a field). */
  function senderOf(envelope: TxEnvelopeTempo.TxEnvelopeTempo): Address {
    const payload = TxEnvelopeTempo.getSignPayload(envelope);
    const signature = envelope.signature as SignatureEnvelope.SignatureEnvelope | undefined;
    if (!signature) throw new RpcError(-32000, 'transaction is not signed by its sender');
    if (signature.type === 'secp256k1') {
      const sender = Secp256k1.recoverAddress({ payload, signature: signature.signature });
      if (!Secp256k1.verify({ address: sender, payload, signature: signature.signature })) throw new RpcError(-32000, 'invalid sender signature');
      return sender;
    }
    throw new RpcError(-32000, `signature type ${signature.type} is not supported by this stand-in`);
  }

  /** Decodes, checks and applies a signed Tempo transaction; returns its receipt. */
  function apply(raw: Hex): { hash: Hex; receipt: Record<string, unknown> } {
    if (!raw.startsWith('0x76')) throw new RpcError(-32000, raw.startsWith('0x78') ? 'a fee-payer envelope (0x78) must be co-signed before it is sent' : `unsupported transaction type ${raw.slice(0, 4)}`);
    const hash = keccak256(raw);
    if (receipts.has(hash)) throw new RpcError(-32000, 'already known');
    const parsed = Transaction.deserialize(raw as never) as { chainId?: number; from?: Address };
    const envelope = TxEnvelopeTempo.deserialize(raw as TxEnvelopeTempo.Serialized);
    if (Number(envelope.chainId) !== chainId) throw new RpcError(-32000, `invalid chain id ${envelope.chainId}`);
    const sender = senderOf(envelope);
    if (parsed.from && !isAddressEqual(parsed.from, sender)) throw new RpcError(-32000, 'the named sender did not sign this transaction');
    let feePayer: Address = sender;
    if (envelope.feePayerSignature === null) throw new RpcError(-32000, 'transaction asks for a fee payer but carries no fee payer signature');
    if (envelope.feePayerSignature) {
      feePayer = Secp256k1.recoverAddress({ payload: TxEnvelopeTempo.getFeePayerSignPayload(envelope, { sender }), signature: envelope.feePayerSignature });
    }
    const time = now();
    if (envelope.validAfter !== undefined && BigInt(envelope.validAfter) > time) throw new RpcError(-32000, 'transaction not yet valid');
    if (envelope.validBefore !== undefined && BigInt(envelope.validBefore) <= time) throw new RpcError(-32000, 'transaction expired');
    const nonceKey = BigInt(envelope.nonceKey ?? 0n);
    const nonce = BigInt(envelope.nonce ?? 0n);
    const signHash = TxEnvelopeTempo.getSignPayload(envelope);
    const slot = `${sender.toLowerCase()}:${nonceKey}`;
    if (nonceKey === expiringNonceKey) {
      if (nonce !== 0n || envelope.validBefore === undefined) throw new RpcError(-32000, 'an expiring nonce needs nonce 0 and validBefore');
      if (BigInt(envelope.validBefore) > time + maxExpiringWindowSeconds) throw new RpcError(-32000, 'expiring nonce valid for too long');
      for (const [key, before] of expiring) if (before <= time) expiring.delete(key);
      if (expiring.has(signHash)) throw new RpcError(-32000, 'expiring nonce already used');
    } else if (nonce !== (nonces.get(slot) ?? 0n)) {
      throw new RpcError(-32000, `nonce mismatch: expected ${nonces.get(slot) ?? 0n}, got ${nonce}`);
    }
    const calls = (envelope.calls ?? []) as Call[];
    const gasLimit = BigInt(envelope.gas ?? 0n);
    const maxFeePerGas = BigInt(envelope.maxFeePerGas ?? 0n);
    const maxPriority = BigInt(envelope.maxPriorityFeePerGas ?? 0n);
    if (maxFeePerGas < baseFeePerGas) throw new RpcError(-32000, 'maxFeePerGas below the base fee');
    const gasUsed = intrinsicGas(calls);
    if (gasLimit < gasUsed) throw new RpcError(-32000, `intrinsic gas too low: have ${gasLimit}, want ${gasUsed}`);
    const price = baseFeePerGas + (maxPriority < maxFeePerGas - baseFeePerGas ? maxPriority : maxFeePerGas - baseFeePerGas);
    const feeToken = (envelope.feeToken as string | undefined)?.toLowerCase() ?? Addresses.pathUsd.toLowerCase();
    if (!tokens.has(feeToken)) throw new RpcError(-32000, `unknown fee token ${feeToken}`);
    const maxFee = (gasLimit * maxFeePerGas + attoPerTokenUnit - 1n) / attoPerTokenUnit;
    if (balanceOf(balances, feeToken, feePayer) < maxFee) throw new RpcError(-32000, `insufficient fee-token balance for ${feePayer}`);

    if (nonceKey === expiringNonceKey) expiring.set(signHash, BigInt(envelope.validBefore!));
    else nonces.set(slot, nonce + 1n);
    const fee = (gasUsed * price + attoPerTokenUnit - 1n) / attoPerTokenUnit;
    setBalance(balances, feeToken, feePayer, balanceOf(balances, feeToken, feePayer) - fee);
    setBalance(balances, feeToken, Addresses.feeManager, balanceOf(balances, feeToken, Addresses.feeManager) + fee);
    let status = '0x1';
    let logs: Log[] = [];
    const next = copy(balances);
    try {
      logs = execute(next, sender, calls);
      balances = next;
    } catch (error) {
      if (!(error instanceof Revert)) throw error;
      status = '0x0';
    }
    blockNumber += 1n;
    const blockHash = keccak256(toHex(`block-${blockNumber}`));
    blocks.set(blockNumber, { hash: blockHash, timestamp: now() });
    const where = { blockHash, blockNumber: numberToHex(blockNumber), transactionHash: hash, transactionIndex: '0x0' };
    const receipt = {
      ...where,
      contractAddress: null,
      cumulativeGasUsed: numberToHex(gasUsed),
      effectiveGasPrice: numberToHex(price),
      from: sender,
      gasUsed: numberToHex(gasUsed),
      logs: logs.map((l, i) => ({ ...l, ...where, logIndex: numberToHex(i), removed: false })),
      logsBloom: emptyBloom,
      status,
      to: calls[0]?.to ?? null,
      type: '0x76',
      feeToken: getAddress(feeToken),
      feePayer,
    };
    receipts.set(hash, receipt);
    return { hash, receipt };
  }

  /** eth_call: a Tempo call batch is simulated; TIP-20 and fee-manager views are answered from state. */
  function call(request: { calls?: Call[]; type?: string; to?: string; data?: Hex; input?: Hex; value?: unknown; from?: string; feePayer?: unknown; feeToken?: string }): Hex {
    if (request.calls || request.type === '0x76') {
      execute(copy(balances), request.from ?? zeroAddress, request.calls ?? [{ to: request.to, data: request.data ?? request.input, value: request.value }]);
      if (typeof request.feePayer === 'string' && balanceOf(balances, request.feeToken ?? Addresses.pathUsd, request.feePayer) === 0n) throw new Revert('the fee payer holds no fee token');
      return '0x';
    }
    const to = String(request.to ?? '').toLowerCase();
    const data = request.data ?? request.input ?? '0x';
    const token = tokens.get(to);
    if (token) {
      const { functionName, args } = decodeFunctionData({ abi: Abis.tip20, data });
      const result = (value: unknown) => encodeFunctionResult({ abi: Abis.tip20, functionName: functionName as never, result: value as never });
      if (functionName === 'balanceOf') return result(balanceOf(balances, to, args![0] as string));
      if (functionName === 'decimals') return result(token.decimals);
      if (functionName === 'name') return result(token.name);
      if (functionName === 'symbol') return result(token.symbol);
      if (functionName === 'currency') return result(token.currency);
      throw new Revert(`TIP-20 ${functionName} is not implemented by this stand-in`);
    }
    if (to === Addresses.feeManager.toLowerCase()) {
      const { functionName } = decodeFunctionData({ abi: Abis.feeManager, data });
      if (functionName === 'userTokens') return encodeFunctionResult({ abi: Abis.feeManager, functionName: 'userTokens', result: zeroAddress });
    }
    throw new Revert(`no contract at ${request.to} answers ${data.slice(0, 10)}`);
  }

  const reverting = <T>(run: () => T): T => {
    try {
      return run();
    } catch (error) {
      if (error instanceof Revert) throw new RpcError(3, `execution reverted: ${error.message}`);
      throw error;
    }
  };

  function handle(method: string, params: unknown[]): unknown {
    switch (method) {
      case 'eth_chainId':
        return numberToHex(chainId);
      case 'net_version':
        return String(chainId);
      case 'eth_blockNumber':
        return numberToHex(blockNumber);
      case 'eth_getBlockByNumber':
        return block(['latest', 'pending', 'safe', 'finalized'].includes(String(params[0])) ? blockNumber : BigInt(String(params[0])));
      case 'eth_gasPrice':
        return numberToHex(baseFeePerGas);
      case 'eth_maxPriorityFeePerGas':
        return '0x0';
      case 'eth_getTransactionCount':
        return numberToHex(nonces.get(`${String(params[0]).toLowerCase()}:0`) ?? 0n);
      case 'eth_getCode':
        return '0x';
      case 'eth_estimateGas':
        return reverting(() => {
          const request = (params[0] ?? {}) as { calls?: Call[]; to?: string; data?: Hex; from?: string };
          const calls = request.calls ?? [{ to: request.to, data: request.data }];
          execute(copy(balances), request.from ?? zeroAddress, calls);
          return numberToHex(intrinsicGas(calls));
        });
      case 'eth_call':
        return reverting(() => call((params[0] ?? {}) as Parameters<typeof call>[0]));
      case 'eth_sendRawTransaction':
        return apply(params[0] as Hex).hash;
      case 'eth_sendRawTransactionSync':
        return apply(params[0] as Hex).receipt;
      case 'eth_getTransactionReceipt':
        return receipts.get(String(params[0]).toLowerCase()) ?? null;
      default:
        // viem tries eth_fillTransaction first and falls back to estimating when it is not found.
        throw new RpcError(-32601, `method ${method} is not implemented by this stand-in`);
    }
  }

  const answer = (message: { id?: unknown; method?: string; params?: unknown[] }) => {
    try {
      return { jsonrpc: '2.0', id: message.id ?? null, result: handle(String(message.method), message.params ?? []) };
    } catch (error) {
      const e = error instanceof RpcError ? error : new RpcError(-32603, error instanceof Error ? error.message : String(error));
      return { jsonrpc: '2.0', id: message.id ?? null, error: { code: e.code, message: e.message } };
    }
  };

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const out = Array.isArray(body) ? body.map(answer) : answer(body as Parameters<typeof answer>[0]);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
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
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    chainId,
    balanceOf: (token, holder) => balanceOf(balances, token, holder),
    fund: (token, holder, amount) => setBalance(balances, token, holder, balanceOf(balances, token, holder) + amount),
    transactionCount: () => receipts.size,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
