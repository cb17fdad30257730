/**
 * The `x402_base` rail: x402 v2, exact scheme, USDC on Base (EIP-3009 transfer authorizations). The only module that
 * imports the x402 packages. The payer signs an authorization; the facilitator (X402_FACILITATOR_URL) verifies it and,
 * once the answer is ready, settles it on chain and pays the gas.
 */
import crypto from 'node:crypto';
import {
  HTTPFacilitatorClient,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import { PaymentPayloadV2Schema } from '@x402/core/schemas';
import { x402ResourceServer } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { authorizationTypes } from '@x402/evm';
import { createPublicClient, http, keccak256, parseAbi, parseAbiItem, stringToBytes, verifyTypedData } from 'viem';
import { z } from 'zod';
import type { X402Config } from '../../config/Config.js';
import { ServiceError } from '../../errors/ServiceError.js';
import { CredentialRejected, SettlementUnknown, isTransportFailure } from '../Rail.js';
import type { InboundCredential, OutboundReceipt, PaymentRail, Settlement, Terms, Verified } from '../Rail.js';
import { httpHeaders } from '../../contract/Payment.js';

/** The exact scheme's EIP-3009 payload, checked before anything is sent to the facilitator. */
const uint = z.string().regex(/^\d{1,78}$/);
const Eip3009 = z.object({
  signature: z.string().regex(/^0x[0-9a-fA-F]+$/),
  authorization: z.object({
    from: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    to: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    value: uint,
    validAfter: uint,
    validBefore: uint,
    nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  }),
});

/** USDC has 6 decimals: one millicent is 10 atomic units. */
const atomicPerMillicent = 10n;

type Parsed = { payload: PaymentPayload; requirements: PaymentRequirements };

const b64url = (buffer: Buffer) => buffer.toString('base64url');

/** The first 4 bytes of every nonce this server announces: a nonce that has them was issued for some challenge. */
const nonceTag = keccak256(stringToBytes('profile-edge/x402/nonce')).slice(0, 10) as `0x${string}`;

/**
 * The EIP-3009 nonce a challenge asks the payer to sign: the tag, then 28 bytes of a hash of its token, so the
 * signature itself says which challenge (question, scope, mode, price) it pays for, and an authorization cannot be
 * moved to another one. A random nonce (a payer whose client picks its own) carries the tag by chance once in 2^32.
 */
export const boundNonce = (token: string): `0x${string}` => `${nonceTag}${keccak256(stringToBytes(token)).slice(10)}`;

/** Clock difference allowed between this server and a payer, in seconds. */
const skewSeconds = 5;

export function create(input: { config: X402Config; secret: string; ttlSeconds: number }): PaymentRail {
  const { config, secret, ttlSeconds } = input;
  const network = `eip155:${config.chainId}` as const;
  const payTo = config.payTo!;
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: config.facilitatorUrl, timeoutMs: 30_000 }));
  server.register(network, new ExactEvmScheme());
  let ready: Promise<void> | undefined;
  // The facilitator is asked what it supports once; a failure is retried on the next request.
  const initialized = (): Promise<void> => {
    ready ??= server.initialize().catch((error: unknown) => {
      ready = undefined;
      throw facilitatorDown(error);
    });
    return ready;
  };

  /** A challenge token bound to the terms by HMAC: its expiry, a nonce, and everything the payer is asked to pay. */
  const sign = (terms: Terms, expires: number, nonce: string): string =>
    b64url(crypto.createHmac('sha256', secret).update(['x402_base', terms.digest, expires, nonce, amountOf(terms), payTo.toLowerCase(), config.currency.toLowerCase(), network].join('|')).digest());
  /**
   * An authorization lives no longer than its challenge (`validBefore` at most its expiry). A payer whose client
   * chooses its own window signs for `maxTimeoutSeconds` from when it signs, so that window is shorter than the
   * challenge by the time a payer may take to sign; one that follows the challenge signs `extra.validBefore`.
   */
  const signingSeconds = Math.min(60, Math.floor(ttlSeconds / 4));
  /** The time left to answer and settle that a credential must still have when it arrives. */
  const answerSeconds = Math.min(30, Math.floor(ttlSeconds / 2));

  const requirementsFor = async (terms: Terms, token: string): Promise<PaymentRequirements> => {
    await initialized();
    const expires = token.split('.')[0]!;
    const [requirements] = await server.buildPaymentRequirements({
      scheme: 'exact',
      network,
      payTo,
      price: { amount: amountOf(terms), asset: config.currency, extra: { name: config.currencyName, version: config.currencyVersion } },
      maxTimeoutSeconds: ttlSeconds - signingSeconds,
      // What a binding payer signs: this challenge's own nonce, valid until the challenge expires.
      extra: { challenge: token, nonce: boundNonce(token), validBefore: expires },
    });
    if (!requirements) throw facilitatorDown(new Error('no payment requirements for the network'));
    return requirements;
  };

  const parse = (credential: InboundCredential): PaymentPayload => {
    let value: unknown = credential.value;
    if (typeof value === 'string') {
      try {
        value = decodePaymentSignatureHeader(value);
      } catch {
        throw new CredentialRejected('it is not an x402 payment payload (base64-encoded JSON, or the JSON object itself over MCP).');
      }
    }
    const parsed = PaymentPayloadV2Schema.safeParse(value);
    if (!parsed.success) throw new CredentialRejected('it is not an x402 v2 payment payload.');
    if (!Eip3009.safeParse(parsed.data.payload).success) throw new CredentialRejected('it carries no well-formed EIP-3009 transfer authorization and signature.');
    return parsed.data as PaymentPayload;
  };

  const client = createPublicClient({ transport: http(config.rpcUrl) });
  const facilitator = new HTTPFacilitatorClient({ url: config.facilitatorUrl, timeoutMs: 2_000 });

  return {
    rail: 'x402_base',
    async probe() {
      const [supported, chainId] = await Promise.all([
        facilitator.getSupported().catch((error: unknown) => Promise.reject(new Error(`the facilitator did not answer (${error instanceof Error ? error.message : String(error)})`))),
        client.getChainId().catch((error: unknown) => Promise.reject(new Error(`the chain's RPC did not answer (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`))),
      ]);
      if (chainId !== config.chainId) throw new Error(`the RPC serves chain ${chainId}, not ${config.chainId}`);
      if (!supported.kinds.some((k) => k.network === network && k.scheme === 'exact')) throw new Error(`the facilitator does not settle the exact scheme on ${network}`);
    },
    accepts(credential) {
      if (credential.via === 'header') return credential.name === 'payment-signature';
      const value = credential.value;
      if (typeof value === 'string') return !/^Payment\s/i.test(value);
      return value !== null && typeof value === 'object' && 'x402Version' in value;
    },
    async challenge(terms, options = {}) {
      const expires = Math.floor(Date.now() / 1000) + ttlSeconds;
      const nonce = crypto.randomBytes(12).toString('hex');
      const token = `${expires}.${nonce}.${sign(terms, expires, nonce)}`;
      const requirements = await requirementsFor(terms, token);
      // x402 clients show `error`: why the last credential was refused, when it was.
      const error = options.reason ? flat(options.reason) : 'Payment required';
      const required = await server.createPaymentRequiredResponse([requirements], { url: terms.resource, description: terms.description, mimeType: 'application/json' }, error);
      return { headers: { [httpHeaders.x402_base.challenge]: encodePaymentRequiredHeader(required), 'Cache-Control': 'no-store' }, mcp: required };
    },
    async verify(credential, terms, options): Promise<Verified> {
      const payload = parse(credential);
      const token = payload.accepted.extra?.challenge;
      const [expires, nonce, mac] = typeof token === 'string' ? token.split('.') : [];
      if (!expires || !nonce || !mac) throw new CredentialRejected('it does not answer a challenge from this server.');
      const { authorization, signature } = payload.payload as z.infer<typeof Eip3009>;
      const wallet = authorization.from.toLowerCase();
      const signedNonce = authorization.nonce.toLowerCase();
      const spendKey = `${wallet}:${signedNonce}`;
      // A transfer already spent is refused by this server's own record before anything else, in the same words
      // whatever question it is presented for; the check writes nothing, so an unauthenticated copy holds nothing.
      await options.unspent(spendKey);
      const expected = Buffer.from(sign(terms, Number(expires), nonce));
      const given = Buffer.from(mac);
      if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
        throw new CredentialRejected('its challenge was not issued by this server for this request (question, scope, mode and price must be the same), or was altered.');
      }
      if (signedNonce !== boundNonce(token as string)) {
        // A nonce issued for another challenge belongs to that one, and binds nothing here.
        if (signedNonce.startsWith(nonceTag)) throw new CredentialRejected('its EIP-3009 nonce was issued for another challenge, and pays for that question only.');
        if (config.nonceBinding === 'required') {
          throw new CredentialRejected(
            'its EIP-3009 nonce is not the one its challenge announces (accepted.extra.nonce): sign the authorization with that nonce and validBefore accepted.extra.validBefore, so that it pays for this question only (@x402/evm\'s own exact client picks a random nonce; /SKILL.md shows a client that signs the announced one).',
          );
        }
      }
      // Whatever becomes of it, a signed authorization now pays for this challenge or for none. A signature checked
      // here binds at once (refusals below included); one that is not a plain key's (a contract wallet's, which the
      // facilitator checks) binds once the facilitator verified it; an unsigned one binds nothing.
      const bind = async () => {
        if ((await options.bind(spendKey, token as string)) !== token) {
          throw new CredentialRejected('its transfer authorization was first presented with another challenge, and pays for that question only.');
        }
      };
      const signedByKey = await verifyTypedData({
        address: authorization.from as `0x${string}`,
        domain: { name: config.currencyName, version: config.currencyVersion, chainId: config.chainId, verifyingContract: config.currency as `0x${string}` },
        types: authorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: { ...authorization, value: BigInt(authorization.value), validAfter: BigInt(authorization.validAfter), validBefore: BigInt(authorization.validBefore) } as never,
        signature: signature as `0x${string}`,
      }).catch(() => false);
      if (signedByKey) await bind();
      const now = Date.now() / 1000;
      if (Number(expires) < now) throw new CredentialRejected('its challenge has expired.');
      const validBefore = Number(authorization.validBefore);
      if (validBefore > Number(expires) + skewSeconds) {
        throw new CredentialRejected(`its authorization stays valid until ${iso(validBefore)}, after its challenge expires (${iso(Number(expires))}): sign validBefore accepted.extra.validBefore or earlier.`);
      }
      if (validBefore < now + answerSeconds) throw new CredentialRejected(`its authorization expires at ${iso(validBefore)}, too soon to answer and settle.`);
      // Claimed before the facilitator hears of it: a copy sent to another request (or instance) is turned away here.
      await options.claim(spendKey);
      const requirements = server.findMatchingRequirements([await requirementsFor(terms, token as string)], payload);
      if (!requirements) throw new CredentialRejected('it does not match what the challenge asked for (amount, asset, receiver or network).');
      let result;
      try {
        result = await server.verifyPayment(payload, requirements);
      } catch (error) {
        if (isTransportFailure(error)) throw facilitatorDown(error);
        throw new CredentialRejected(`the facilitator could not verify it (${(error as { invalidReason?: string }).invalidReason ?? 'error'}).`);
      }
      if (!result.isValid) throw new CredentialRejected(`the facilitator refused it (${result.invalidReason ?? 'invalid'}).`);
      if (!signedByKey) await bind();
      return { rail: 'x402_base', challengeId: token as string, spendKey, wallet, settleBy: validBefore * 1000, state: { payload, requirements } satisfies Parsed };
    },
    async settle(verified): Promise<Settlement> {
      const { payload, requirements } = verified.state as Parsed;
      let result: SettleResponse;
      try {
        result = await server.settlePayment(payload, requirements);
      } catch (error) {
        // A facilitator that answered with a failed settlement is a refusal; one that did not answer, or failed
        // without a reason, may have sent the transfer: that is looked up later, never called "nothing charged".
        const reason = (error as { errorReason?: string }).errorReason;
        if (reason) throw new CredentialRejected(`the facilitator could not settle it (${reason}).`);
        throw new SettlementUnknown('the x402 facilitator did not confirm the settlement', { cause: error });
      }
      if (!result.success) throw new CredentialRejected(`the facilitator could not settle it (${result.errorReason ?? 'failed'}).`);
      const { errorMessage: _raw, ...receipt } = result;
      return { txHash: result.transaction, receipt };
    },
    receipt(settlement, terms): OutboundReceipt {
      const response: SettleResponse = {
        success: true,
        transaction: settlement.txHash,
        network,
        ...(settlement.receipt as Partial<SettleResponse>),
        amount: amountOf(terms),
      };
      return { rail: 'x402_base', txHash: settlement.txHash, receipt: { ...response }, headers: { [httpHeaders.x402_base.receipt]: encodePaymentResponseHeader(response) }, mcp: response };
    },
    async landed({ spendKey, settleBy }, { now, marginMs }) {
      const [wallet, nonce] = spendKey.split(':') as [`0x${string}`, `0x${string}`];
      const used = await client.readContract({
        address: config.currency as `0x${string}`,
        abi: parseAbi(['function authorizationState(address authorizer, bytes32 nonce) view returns (bool)']),
        functionName: 'authorizationState',
        args: [wallet, nonce],
      });
      // Unused, and past its validBefore: no one can settle it any more. Before that, the facilitator still might.
      if (!used) return settleBy === null || now > settleBy + marginMs ? null : undefined;
      // Used, or cancelled by its payer: only a transfer that spent it moved money. Logs older than the window a
      // node serves cannot be searched; such a nonce is taken as spent, as before transfers were looked up.
      const latest = await client.getBlockNumber();
      const logs = await client
        .getLogs({
          address: config.currency as `0x${string}`,
          event: parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)'),
          args: { authorizer: wallet, nonce },
          fromBlock: latest > logWindowBlocks ? latest - logWindowBlocks : 0n,
        })
        .catch(() => undefined);
      if (logs === undefined) return { txHash: spendKey, receipt: {} };
      const transfer = logs[0];
      return transfer ? { txHash: transfer.transactionHash, receipt: {} } : null;
    },
  };
}

/** How far back reconciliation searches a chain's logs for the transfer that spent an authorization (two days on Base). */
const logWindowBlocks = 100_000n;

/** One line of printable text, short enough for a header: the challenge travels base64-encoded in one. */
const flat = (text: string): string => {
  const line = [...text].map((c) => (/\p{Cc}|\p{Zl}|\p{Zp}/u.test(c) ? ' ' : c)).join('').replace(/\s+/g, ' ').trim();
  return line.length > 500 ? `${line.slice(0, 497)}...` : line;
};

/** A Unix time as ISO 8601, or as it was given when no date can hold it. */
const iso = (seconds: number): string => (Math.abs(seconds) <= 8.64e12 ? new Date(seconds * 1000).toISOString() : `${seconds} (Unix seconds)`);

function amountOf(terms: Terms): string {
  return (BigInt(terms.amountMillicents) * atomicPerMillicent).toString();
}

function facilitatorDown(error: unknown): ServiceError {
  return new ServiceError('service_unavailable', 'The x402 facilitator could not be reached; nothing was charged. Try again shortly.', { cause: error });
}
