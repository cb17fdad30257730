import { ServiceError } from '../errors/ServiceError.js';
import type { Sql } from './Sql.js';

/** The two kinds of credential the service issues. */
export type CredentialKind = 'api_key' | 'bearer_token';

/** A stored API key or bearer token, without its secret. */
export type Credential = {
  id: string;
  kind: CredentialKind;
  accountId: string;
  label: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
};

const columns = `id, kind, account_id AS accountId, label, created_at AS createdAt, last_used_at AS lastUsedAt, revoked_at AS revokedAt`;

/** Stores a credential minted by the caller: only its id and the hash of its secret, never the secret. */
export async function insert(sql: Sql, input: { id: string; kind: CredentialKind; accountId: string; label?: string | undefined; hash: Uint8Array }): Promise<Credential> {
  await sql.run('INSERT INTO credentials (id, kind, account_id, label, secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
    input.id,
    input.kind,
    input.accountId,
    input.label ?? '',
    input.hash,
    Date.now(),
  ]);
  return (await find(sql, input.kind, input.id))!;
}

/** A credential row by id, revoked or not. */
export async function find(sql: Sql, kind: CredentialKind, id: string): Promise<Credential | undefined> {
  return sql.get<Credential>(`SELECT ${columns} FROM credentials WHERE id = ? AND kind = ?`, [id, kind]);
}

/** A credential with the stored hash of its secret, for the one check that compares them. */
export async function withHash(sql: Sql, kind: CredentialKind, id: string): Promise<(Credential & { secretHash: Buffer }) | undefined> {
  return sql.get<Credential & { secretHash: Buffer }>(`SELECT ${columns}, secret_hash AS secretHash FROM credentials WHERE id = ? AND kind = ?`, [id, kind]);
}

/** Records that a credential was used. */
export async function touch(sql: Sql, id: string, at: number): Promise<void> {
  await sql.run('UPDATE credentials SET last_used_at = ? WHERE id = ?', [at, id]);
}

/** Revokes a credential; later requests presenting it get 401. */
export async function revoke(sql: Sql, kind: CredentialKind, id: string): Promise<Credential> {
  const changed = await sql.run('UPDATE credentials SET revoked_at = ? WHERE id = ? AND kind = ? AND revoked_at IS NULL', [Date.now(), id, kind]);
  const credential = await find(sql, kind, id);
  if (!credential) throw new ServiceError('not_found', `no ${kind.replace('_', ' ')} "${id}"`);
  if (changed === 0) throw new ServiceError('conflict', `${kind.replace('_', ' ')} "${id}" is already revoked`);
  return credential;
}

/** Every credential of a kind, optionally of one account. */
export async function list(sql: Sql, kind: CredentialKind, accountId?: string): Promise<Credential[]> {
  return accountId
    ? sql.all<Credential>(`SELECT ${columns} FROM credentials WHERE kind = ? AND account_id = ? ORDER BY created_at, id`, [kind, accountId])
    : sql.all<Credential>(`SELECT ${columns} FROM credentials WHERE kind = ? ORDER BY created_at, id`, [kind]);
}
