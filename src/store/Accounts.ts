import type { Database } from './Database.js';
import * as Ids from './Ids.js';
import { ServiceError } from '../errors/ServiceError.js';

export type Account = {
  id: string;
  name: string;
  email: string | null;
  unlockBalance: number;
  creditBalance: number;
  createdAt: number;
};

const columns = `id, name, email, unlock_balance AS unlockBalance, credit_balance AS creditBalance, created_at AS createdAt`;

export const namePattern = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Creates an account with zero balances. */
export function create(db: Database, input: { name: string; email?: string | undefined }): Account {
  if (!namePattern.test(input.name)) {
    throw new ServiceError('invalid_request', `account name "${input.name}" must be lowercase letters, digits, ".", "_" or "-"`);
  }
  if (find(db, input.name)) throw new ServiceError('conflict', `account "${input.name}" already exists`);
  const id = Ids.random('acct');
  db.prepare('INSERT INTO accounts (id, name, email, created_at) VALUES (?, ?, ?, ?)').run(id, input.name, input.email ?? null, Date.now());
  return get(db, id);
}

/** An account by id or by name. */
export function find(db: Database, idOrName: string): Account | undefined {
  return db.prepare(`SELECT ${columns} FROM accounts WHERE id = ? OR name = ?`).get(idOrName, idOrName) as Account | undefined;
}

/** An account that must exist. */
export function get(db: Database, idOrName: string): Account {
  const account = find(db, idOrName);
  if (!account) throw new ServiceError('not_found', `no account "${idOrName}"`);
  return account;
}

export function list(db: Database): Account[] {
  return db.prepare(`SELECT ${columns} FROM accounts ORDER BY name`).all() as Account[];
}
