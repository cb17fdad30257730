import type { Database } from './Database.js';
import * as Secret from '../auth/Secret.js';
import type { SecretKind } from '../auth/Secret.js';
import { ServiceError } from '../errors/ServiceError.js';

/** A stored API key or bearer token, without its secret. */
export type Credential = {
  id: string;
  kind: SecretKind;
  accountId: string;
  label: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
};

const columns = `id, kind, account_id AS accountId, label, created_at AS createdAt, last_used_at AS lastUsedAt, revoked_at AS revokedAt`;

/** Issues a credential for an account; the returned token is the only time the secret exists outside the caller. */
export function issue(db: Database, input: { kind: SecretKind; accountId: string; label?: string | undefined }): { credential: Credential; token: string } {
  const minted = Secret.mint(input.kind);
  db.prepare('INSERT INTO credentials (id, kind, account_id, label, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    minted.id,
    input.kind,
    input.accountId,
    input.label ?? '',
    minted.hash,
    Date.now(),
  );
  return { credential: find(db, input.kind, minted.id)!, token: minted.token };
}

/** A credential row by id, revoked or not. */
export function find(db: Database, kind: SecretKind, id: string): Credential | undefined {
  return db.prepare(`SELECT ${columns} FROM credentials WHERE id = ? AND kind = ?`).get(id, kind) as Credential | undefined;
}

/**
 * The live credential a presented token stands for, or undefined when the token is malformed, unknown or revoked.
 * The secret is compared with the stored hash in constant time.
 */
export function verify(db: Database, kind: SecretKind, token: string): Credential | undefined {
  const parsed = Secret.parse(kind, token);
  if (!parsed) return undefined;
  const row = db.prepare(`SELECT ${columns}, secret_hash AS secretHash FROM credentials WHERE id = ? AND kind = ?`).get(parsed.id, kind) as
    | (Credential & { secretHash: Buffer })
    | undefined;
  if (!row || !Secret.matches(parsed.secret, row.secretHash) || row.revokedAt !== null) return undefined;
  const { secretHash: _secretHash, ...credential } = row;
  const now = Date.now();
  // Recording use at most once a minute keeps reads from turning into a write per request.
  if (credential.lastUsedAt === null || now - credential.lastUsedAt > 60_000) {
    try {
      db.prepare('UPDATE credentials SET last_used_at = ? WHERE id = ?').run(now, credential.id);
    } catch {
      // Bookkeeping only: a busy database must not turn a valid key into a failed request.
    }
  }
  return credential;
}

/** Revokes a credential; later requests presenting it get 401. */
export function revoke(db: Database, kind: SecretKind, id: string): Credential {
  const result = db.prepare('UPDATE credentials SET revoked_at = ? WHERE id = ? AND kind = ? AND revoked_at IS NULL').run(Date.now(), id, kind);
  const credential = find(db, kind, id);
  if (!credential) throw new ServiceError('not_found', `no ${kind.replace('_', ' ')} "${id}"`);
  if (result.changes === 0) throw new ServiceError('conflict', `${kind.replace('_', ' ')} "${id}" is already revoked`);
  return credential;
}

/** Every credential of a kind, optionally of one account. */
export function list(db: Database, kind: SecretKind, accountId?: string): Credential[] {
  const rows = accountId
    ? db.prepare(`SELECT ${columns} FROM credentials WHERE kind = ? AND account_id = ? ORDER BY created_at`).all(kind, accountId)
    : db.prepare(`SELECT ${columns} FROM credentials WHERE kind = ? ORDER BY created_at`).all(kind);
  return rows as Credential[];
}
