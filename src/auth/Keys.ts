import type { Store } from '../store/Store.js';
import type { Credential } from '../store/Credentials.js';
import * as Secret from './Secret.js';
import type { SecretKind } from './Secret.js';

/** Issues an API key or bearer token for an account; the returned token is the only time the secret exists outside the caller. */
export async function issue(store: Store, input: { kind: SecretKind; accountId: string; label?: string | undefined }): Promise<{ credential: Credential; token: string }> {
  const minted = Secret.mint(input.kind);
  const credential = await store.credentials.insert({ id: minted.id, kind: input.kind, accountId: input.accountId, label: input.label, hash: minted.hash });
  return { credential, token: minted.token };
}

/**
 * The live credential a presented token stands for, or undefined when the token is malformed, unknown or revoked.
 * The secret is compared with the stored hash in constant time.
 */
export async function verify(store: Store, kind: SecretKind, token: string): Promise<Credential | undefined> {
  const parsed = Secret.parse(kind, token);
  if (!parsed) return undefined;
  const row = await store.credentials.withHash(kind, parsed.id);
  if (!row || !Secret.matches(parsed.secret, row.secretHash) || row.revokedAt !== null) return undefined;
  const { secretHash: _secretHash, ...credential } = row;
  const now = Date.now();
  // Recording use at most once a minute keeps reads from turning into a write per request.
  if (credential.lastUsedAt === null || now - credential.lastUsedAt > 60_000) {
    // Bookkeeping only: a busy database must not turn a valid key into a failed request.
    await store.credentials.touch(credential.id, now).catch(() => undefined);
  }
  return credential;
}
