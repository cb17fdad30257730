/**
 * The `tempo` rail: MPP (the Payment HTTP authentication scheme) with Tempo's TIP-20 USDC, through mppx. The only
 * module that imports mppx's server. A payer either signs a transfer the server broadcasts (pull: the fee payer, when
 * configured, co-signs and pays the gas), or broadcasts it themselves and sends its hash (push: the money has moved).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import { Challenge, Credential, Errors, PaymentRequest, Receipt } from 'mppx';
import { Expires, Mppx, Store, tempo } from 'mppx/server';
import { SignatureEnvelope, TxEnvelopeTempo } from 'ox/tempo';
import { createClient, http, keccak256 } from 'viem';
import type { Hex, Transport } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { tempo as tempoMainnet, tempoModerato } from 'viem/chains';
import type { TempoConfig } from '../../config/Config.js';
import { ServiceError } from '../../errors/ServiceError.js';
import * as Pricing from '../Pricing.js';
import { CredentialRejected, PaidButRefused, SettlementUnknown, isTransportFailure } from '../Rail.js';
import type { InboundCredential, OutboundReceipt, PaymentRail, SettleHooks, Settlement, Terms, Verified } from '../Rail.js';
import { httpHeaders } from '../../contract/Payment.js';

/** The ERC-20 / TIP-20 Transfer(address,address,uint256) event's topic. */
const transferTopic = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** Bound into every challenge id and the on-chain memo: it must not change while challenges are out. */
const realm = 'profile-edge';

/** The amount in the token's units as mppx takes it: dollars, as a decimal string. */
const dollars = (terms: Terms): string => (terms.amountMillicents / Pricing.millicentsPerUsd).toFixed(5).replace(/\.?0+$/, '');

/** Clock difference allowed between this server and a payer, in seconds. */
const skewSeconds = 5;

/** The settlement a broadcast belongs to, across mppx's calls: where the hash of what it sends is told first. */
const broadcasting = new AsyncLocalStorage<SettleHooks>();

/**
 * A node transport that, inside a settlement, tells the settlement the hash of each transaction it is about to send
 * before sending it: mppx co-signs inside its broadcast, so this is the first moment the final hash exists.
 */
function announcing(inner: Transport): Transport {
  return (options) => {
    const transport = inner(options);
    const request: typeof transport.request = async (args, requestOptions) => {
      const hooks = broadcasting.getStore();
      if (hooks && (args.method === 'eth_sendRawTransaction' || args.method === 'eth_sendRawTransactionSync')) {
        await hooks.sending(keccak256((args.params as [Hex])[0]));
      }
      return transport.request(args, requestOptions);
    };
    return { ...transport, request };
  };
}

export function create(input: { config: TempoConfig; secret: string; ttlSeconds: number }): PaymentRail {
  const { config, secret, ttlSeconds } = input;
  const chain = { ...(config.chainId === tempoMainnet.id ? tempoMainnet : tempoModerato), id: config.chainId };
  const node = announcing(http(config.rpcUrl));
  const getClient = ({ chainId }: { chainId?: number | undefined }) => createClient({ chain: { ...chain, id: chainId ?? config.chainId }, transport: node });
  const mppx = Mppx.create({
    realm,
    secretKey: secret,
    methods: [
      tempo.charge({
        recipient: config.payTo as `0x${string}`,
        currency: config.currency as `0x${string}`,
        decimals: 6,
        ...(config.feePayerKey && { feePayer: privateKeyToAccount(config.feePayerKey) }),
        getClient,
        // Replays are refused by the payments table before anything reaches mppx; its own store is a second guard.
        store: Store.memory(),
      }),
    ],
  });
  /**
   * What a credential must have been issued for: the price, and the challenge's own metadata (the request digest and
   * a nonce, so two challenges for the same request in the same millisecond are still two challenges).
   */
  const bound = (terms: Terms, meta: Record<string, string>, modes?: ('pull' | 'push')[]) => ({ request: { amount: dollars(terms), ...(modes && { supportedModes: modes }) }, meta });
  /** The modes a challenge allowed (only signing, for a wallet with a credit), as the route must repeat them. */
  const modesOf = (challenge: Challenge.Challenge) => (challenge.request as { methodDetails?: { supportedModes?: ('pull' | 'push')[] } }).methodDetails?.supportedModes;

  const authorizationOf = (credential: InboundCredential): string => {
    if (credential.via === 'header') return credential.value.replace(/^Payment\s+/i, 'Payment ');
    if (typeof credential.value === 'string') return credential.value;
    try {
      return Credential.serialize(credential.value as Credential.Credential);
    } catch {
      throw new CredentialRejected('it is not an MPP credential ({challenge, payload, source}).');
    }
  };

  /**
   * The wallet that sent a transfer to this server's address, in its currency, of the challenge's amount, in a
   * transaction that succeeded; undefined when the transaction is no such transfer.
   */
  const sentHere = async (hash: `0x${string}`, challenge: Challenge.Challenge): Promise<string | undefined> => {
    const receipt = (await getClient({}).request({ method: 'eth_getTransactionReceipt', params: [hash] })) as {
      status?: string;
      from?: string;
      logs?: { address: string; topics: string[]; data: string }[];
    } | null;
    if (receipt?.status !== '0x1' || !receipt.from) return undefined;
    const amount = BigInt((challenge.request as { amount?: string }).amount ?? '0');
    const to = config.payTo!.toLowerCase().slice(2);
    const from = receipt.from.toLowerCase().slice(2);
    const transfer = receipt.logs?.find(
      (l) =>
        l.address.toLowerCase() === config.currency.toLowerCase() &&
        l.topics[0] === transferTopic &&
        l.topics[1]?.toLowerCase().endsWith(from) &&
        l.topics[2]?.toLowerCase().endsWith(to) &&
        BigInt(l.data) === amount,
    );
    return transfer ? receipt.from.toLowerCase() : undefined;
  };

  return {
    rail: 'tempo',
    async probe() {
      const chainId = await getClient({})
        .request({ method: 'eth_chainId' })
        .catch((error: unknown) => Promise.reject(new Error(`the chain's RPC did not answer (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`)));
      if (Number(chainId) !== config.chainId) throw new Error(`the RPC serves chain ${Number(chainId)}, not ${config.chainId}`);
    },
    accepts(credential) {
      if (credential.via === 'header') return credential.name === 'authorization';
      const value = credential.value;
      if (typeof value === 'string') return /^Payment\s/i.test(value);
      return value !== null && typeof value === 'object' && 'challenge' in value && 'payload' in value;
    },
    async challenge(terms) {
      const challenge = await mppx.challenge.tempo.charge({
        amount: dollars(terms),
        description: terms.description,
        meta: { digest: terms.digest, nonce: crypto.randomBytes(12).toString('base64url') },
        expires: Expires.seconds(ttlSeconds),
        ...(!config.feePayerKey && { feePayer: false }),
      });
      return { headers: { [httpHeaders.tempo.challenge]: Challenge.serialize(challenge), 'Cache-Control': 'no-store' }, mcp: challenge };
    },
    async verify(credential, terms, options): Promise<Verified> {
      const authorization = authorizationOf(credential);
      let parsed: Credential.Credential;
      try {
        parsed = Credential.deserialize(authorization);
      } catch {
        throw new CredentialRejected('it is not a readable MPP credential (Payment <base64url of {challenge, payload, source}>).');
      }
      if (!Challenge.verify(parsed.challenge, { secretKey: secret })) {
        throw new CredentialRejected('its challenge was not issued by this server, or was altered.');
      }
      const meta = metaOf(parsed.challenge);
      const payload = (parsed.payload ?? {}) as { type?: string; hash?: `0x${string}`; signature?: `0x${string}` };
      // Claimed before the chain is asked anything: a copy sent to another request (or instance) is turned away here.
      const spendKey =
        payload.type === 'hash' && typeof payload.hash === 'string'
          ? payload.hash.toLowerCase()
          : payload.type === 'transaction' && typeof payload.signature === 'string'
            ? `signed:${keccak256(payload.signature)}`
            : undefined;
      if (spendKey) await options.claim(spendKey);
      let validation;
      try {
        if (meta?.digest !== terms.digest) throw new CredentialRejected('its challenge was issued for another request (question, scope, mode and price must be the same).');
        validation = await mppx.validateCredential(authorization, bound(terms, meta, modesOf(parsed.challenge)));
      } catch (error) {
        const refusal = rejected(error, 'it does not pay for this request');
        // A transfer the payer already sent to this server, for one of its challenges, is not simply refused.
        if (refusal instanceof CredentialRejected && payload.type === 'hash' && typeof payload.hash === 'string' && /^0x[0-9a-fA-F]{64}$/.test(payload.hash)) {
          const wallet = await sentHere(payload.hash, parsed.challenge).catch(() => undefined);
          if (wallet) throw new PaidButRefused(refusal.message, { challengeId: parsed.challenge.id, txHash: payload.hash.toLowerCase(), wallet });
        }
        throw refusal;
      }
      const details = validation.details as { mode?: string; sender?: string; serializedTransaction?: `0x${string}`; hash?: `0x${string}` };
      if (payload.type === 'hash' && payload.hash) {
        // Push: the payer broadcast it; mppx checked the receipt's transfer, sender and memo on chain.
        const wallet = String(details.sender ?? '').toLowerCase();
        return { rail: 'tempo', challengeId: parsed.challenge.id, spendKey: payload.hash.toLowerCase(), wallet, paid: { txHash: payload.hash }, state: { authorization, meta, modes: modesOf(parsed.challenge) } };
      }
      if (payload.type !== 'transaction' || !payload.signature) throw new CredentialRejected('only signed-transaction and transaction-hash credentials are taken.');
      // A sponsored envelope names its sender in a field nobody checks before broadcast: recover the signer instead.
      const { signer, validBefore } = signedBy(payload.signature);
      // A transfer that could land long after its challenge could not be told apart from one that never will.
      const expires = Math.floor(Date.parse(parsed.challenge.expires ?? '') / 1000);
      if (validBefore === undefined) throw new CredentialRejected('its transaction carries no validBefore (an expiring nonce), so it could land at any time.');
      if (Number.isFinite(expires) && validBefore > expires + skewSeconds) throw new CredentialRejected('its transaction stays valid after its challenge expires.');
      // Its hash is not known until the fee payer co-signs, so it is spent under the hash of what the payer signed.
      return {
        rail: 'tempo',
        challengeId: parsed.challenge.id,
        spendKey: `signed:${keccak256(payload.signature)}`,
        wallet: signer.toLowerCase(),
        settleBy: validBefore * 1000,
        state: { authorization, meta, modes: modesOf(parsed.challenge) },
      };
    },
    async settle(verified, terms, hooks): Promise<Settlement> {
      const { authorization, meta, modes } = verified.state as { authorization: string; meta: Record<string, string>; modes?: ('pull' | 'push')[] };
      try {
        const receipt = await broadcasting.run(hooks, () => mppx.broadcastCredential(authorization, bound(terms, meta, modes)));
        return { txHash: receipt.reference, receipt: { ...receipt } };
      } catch (error) {
        // The node not answering is not the node saying no: the transfer may be on its way.
        if (isTransportFailure(error)) throw new SettlementUnknown('the Tempo node did not answer the broadcast', { cause: error });
        throw new CredentialRejected(`the transfer could not be broadcast: ${firstLine(error)}`);
      }
    },
    receipt(settlement, terms): OutboundReceipt {
      const receipt: Receipt.Receipt = { method: 'tempo', status: 'success', timestamp: new Date().toISOString(), reference: settlement.txHash, ...(settlement.receipt as object) } as Receipt.Receipt;
      void terms;
      return { rail: 'tempo', txHash: settlement.txHash, receipt: { ...receipt }, headers: { [httpHeaders.tempo.receipt]: Receipt.serialize(receipt) }, mcp: receipt };
    },
    async landed({ spendKey, txHash, settleBy }, { now, marginMs }) {
      // A pushed transfer is known by its hash; a signed one by the hash kept just before it was broadcast.
      const hash = /^0x[0-9a-f]{64}$/.test(spendKey) ? spendKey : txHash;
      // No hash kept yet: a settlement may be about to keep one and send it, until it can no longer land.
      if (hash === null) return settleBy !== null && now > settleBy + marginMs ? null : undefined;
      const found = (await getClient({}).request({ method: 'eth_getTransactionReceipt', params: [hash as `0x${string}`] })) as { status?: string } | null;
      if (found) return found.status === '0x1' ? { txHash: hash, receipt: {} } : null;
      // Not mined: it may still be, until its validBefore has passed.
      return settleBy !== null && now > settleBy + marginMs ? null : undefined;
    },
  };
}

/** The metadata a challenge carries (HMAC-bound through `opaque`), or undefined when it has none. */
function metaOf(challenge: Challenge.Challenge): Record<string, string> | undefined {
  if (!challenge.opaque) return undefined;
  try {
    return PaymentRequest.deserialize(challenge.opaque) as Record<string, string>;
  } catch {
    return undefined;
  }
}

/** The address that signed a Tempo transaction, recovered from its signature, and until when it is valid (seconds). */
function signedBy(serialized: `0x${string}`): { signer: string; validBefore: number | undefined } {
  try {
    const envelope = TxEnvelopeTempo.deserialize(serialized as TxEnvelopeTempo.Serialized);
    const signer = SignatureEnvelope.extractAddress({ payload: TxEnvelopeTempo.getSignPayload(envelope), signature: envelope.signature!, root: true } as never);
    return { signer, validBefore: envelope.validBefore === undefined ? undefined : Number(envelope.validBefore) };
  } catch {
    throw new CredentialRejected('its transaction signature could not be read.');
  }
}

const firstLine = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300);

/** A node that could not be reached is 503; any other failure to validate is a refused credential. */
function rejected(error: unknown, what: string): Error {
  if (error instanceof CredentialRejected) return error;
  if (isTransportFailure(error)) return new ServiceError('service_unavailable', 'The Tempo node could not be reached; nothing was charged. Try again shortly.', { cause: error });
  const reason = error instanceof Errors.PaymentError && error.status >= 500 ? 'it could not be checked on chain' : firstLine(error);
  return new CredentialRejected(`${what}: ${reason}`);
}
