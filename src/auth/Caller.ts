import type { Database } from '../store/Database.js';
import * as Credentials from '../store/Credentials.js';
import { ServiceError } from '../errors/ServiceError.js';

/** What a transport saw of the caller: raw secrets (never logged) and where the request came from. */
export type Presented = {
  apiKey?: string | undefined;
  bearerToken?: string | undefined;
  /** Identifies an anonymous caller for rate limiting: a client address, or `stdio`. */
  origin: string;
};

/** Who is calling, after their credentials were checked. */
export type Caller = {
  apiKey?: { id: string; accountId: string };
  bearer?: { id: string; accountId: string };
  /** The key quotas are counted under: the API key, else the bearer's account, else the origin. */
  rateKey: string;
};

/**
 * Checks presented credentials. A key or token that is present but malformed, unknown or revoked is a 401: a caller
 * who believes they are authenticated must learn that they are not, rather than silently get anonymous answers.
 */
export function resolve(db: Database, presented: Presented): Caller {
  const caller: Caller = { rateKey: `origin:${presented.origin}` };
  if (presented.bearerToken !== undefined) {
    const token = Credentials.verify(db, 'bearer_token', presented.bearerToken);
    if (!token) throw new ServiceError('invalid_bearer_token');
    caller.bearer = { id: token.id, accountId: token.accountId };
    caller.rateKey = `account:${token.accountId}`;
  }
  if (presented.apiKey !== undefined) {
    const key = Credentials.verify(db, 'api_key', presented.apiKey);
    if (!key) throw new ServiceError('invalid_api_key');
    caller.apiKey = { id: key.id, accountId: key.accountId };
    caller.rateKey = `key:${key.id}`;
  }
  return caller;
}

/** The caller nobody vouched for. */
export const anonymous = (origin: string): Caller => ({ rateKey: `origin:${origin}` });
