import * as Ids from './Ids.js';
import { bytewise, Conflict, type Sql } from './Sql.js';
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
export async function create(sql: Sql, input: { name: string; email?: string | undefined }): Promise<Account> {
  if (!namePattern.test(input.name)) {
    throw new ServiceError('invalid_request', `account name "${input.name}" must be lowercase letters, digits, ".", "_" or "-"`);
  }
  const id = Ids.random('acct');
  try {
    await sql.run('INSERT INTO accounts (id, name, email, created_at) VALUES (?, ?, ?, ?)', [id, input.name, input.email ?? null, Date.now()]);
  } catch (error) {
    if (error instanceof Conflict) throw new ServiceError('conflict', `account "${input.name}" already exists`);
    throw error;
  }
  return get(sql, id);
}

/** An account by id or by name. */
export async function find(sql: Sql, idOrName: string): Promise<Account | undefined> {
  return sql.get<Account>(`SELECT ${columns} FROM accounts WHERE id = ? OR name = ?`, [idOrName, idOrName]);
}

/** An account that must exist. */
export async function get(sql: Sql, idOrName: string): Promise<Account> {
  const account = await find(sql, idOrName);
  if (!account) throw new ServiceError('not_found', `no account "${idOrName}"`);
  return account;
}

export async function list(sql: Sql): Promise<Account[]> {
  return sql.all<Account>(`SELECT ${columns} FROM accounts ORDER BY ${bytewise(sql, 'name')}`);
}
