/**
 * The x402 `exact` scheme for EVM payers, signing the EIP-3009 authorization a profile-edge challenge asks for: the
 * nonce it announces in `extra.nonce` (derived from the challenge, so the signature pays for that question only) and
 * `extra.validBefore` (the challenge's expiry). `@x402/evm`'s own exact client picks a random nonce, which a server
 * with X402_NONCE_BINDING=required refuses. Register it on an `x402Client` in place of `registerExactEvmScheme`.
 */
import type { SchemeNetworkClient } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { getAddress } from 'viem';
import type { LocalAccount } from 'viem';

const bytes32 = /^0x[0-9a-fA-F]{64}$/;

/** An exact-scheme client for one account; it refuses requirements that announce no nonce to sign. */
export function create(account: Pick<LocalAccount, 'address' | 'signTypedData'>): SchemeNetworkClient {
  return {
    scheme: 'exact',
    async createPaymentPayload(x402Version, requirements) {
      const extra = (requirements.extra ?? {}) as { nonce?: unknown; validBefore?: unknown; name?: unknown; version?: unknown };
      if (typeof extra.nonce !== 'string' || !bytes32.test(extra.nonce) || typeof extra.validBefore !== 'string' || !/^\d{1,20}$/.test(extra.validBefore)) {
        throw new Error('the payment requirements announce no nonce and validBefore to bind the authorization to (extra.nonce, extra.validBefore)');
      }
      if (typeof extra.name !== 'string' || typeof extra.version !== 'string') throw new Error('the payment requirements name no EIP-712 domain (extra.name, extra.version)');
      const authorization = {
        from: account.address,
        to: getAddress(requirements.payTo),
        value: requirements.amount,
        validAfter: '0',
        validBefore: extra.validBefore,
        nonce: extra.nonce as `0x${string}`,
      };
      const signature = await account.signTypedData({
        domain: { name: extra.name, version: extra.version, chainId: Number(requirements.network.split(':')[1]), verifyingContract: getAddress(requirements.asset) },
        types: authorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: getAddress(authorization.from),
          to: authorization.to,
          value: BigInt(authorization.value),
          validAfter: 0n,
          validBefore: BigInt(authorization.validBefore),
          nonce: authorization.nonce,
        },
      });
      return { x402Version, payload: { authorization, signature } };
    },
  };
}
