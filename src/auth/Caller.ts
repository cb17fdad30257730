import type { Store } from '../store/Store.js';
import type { Credential } from '../store/Credentials.js';
import * as Keys from './Keys.js';
import { ServiceError } from '../errors/ServiceError.js';
import * as Secret from './Secret.js';
import type { SecretKind } from './Secret.js';

/** What a transport saw of the caller: raw secrets (never logged) and where the request came from. */
export type Presented = {
  apiKey?: string | undefined;
  bearerToken?: string | undefined;
  /** Identifies an anonymous caller for rate limiting: a client address, or `stdio`. */
  origin: string;
  /** How the caller passed each secret, for messages (default: the HTTP headers). */
  names?: { apiKey: string; bearerToken: string };
};

const headerNames = { apiKey: 'The service-api-key header', bearerToken: 'The bearer token' };

/** Who is calling, after their credentials were checked. */
export type Caller = {
  apiKey?: { id: string; accountId: string };
  bearer?: { id: string; accountId: string };
  /** The key quotas are counted under: the API key, else the bearer's account, else the origin. */
  rateKey: string;
};

const described: Record<SecretKind, { code: 'invalid_api_key' | 'invalid_bearer_token'; form: string }> = {
  api_key: { code: 'invalid_api_key', form: 'pek_<16 hex digits>_<43 characters>' },
  bearer_token: { code: 'invalid_bearer_token', form: 'peb_<16 hex digits>_<43 characters>' },
};

/** Verifies one presented secret; the error says exactly what is wrong: empty, malformed, or unknown or revoked. */
async function verified(store: Store, kind: SecretKind, token: string, names: NonNullable<Presented['names']>): Promise<Credential> {
  const { code, form } = described[kind];
  const what = kind === 'api_key' ? names.apiKey : names.bearerToken;
  if (token === '') throw new ServiceError(code, `${what} is present but empty.`);
  if (!Secret.parse(kind, token)) {
    const apiKeyPlace = names.apiKey.replace(/^The /, 'the ');
    const hint = kind === 'bearer_token' && Secret.parse('api_key', token) ? ` (an API key goes in ${apiKeyPlace})` : '';
    throw new ServiceError(code, `${what} is malformed: expected ${form}${hint}.`);
  }
  const found = await Keys.verify(store, kind, token);
  if (!found) throw new ServiceError(code, `${what} is well formed but unknown to this server, or it was revoked.`);
  return found;
}

/**
 * Checks presented credentials. A key or token that is present but malformed, unknown or revoked is a 401: a caller
 * who believes they are authenticated must learn that they are not, rather than silently get anonymous answers.
 */
export async function resolve(store: Store, presented: Presented): Promise<Caller> {
  const caller: Caller = { rateKey: `origin:${presented.origin}` };
  if (presented.bearerToken !== undefined) {
    const token = await verified(store, 'bearer_token', presented.bearerToken, presented.names ?? headerNames);
    caller.bearer = { id: token.id, accountId: token.accountId };
    caller.rateKey = `account:${token.accountId}`;
  }
  if (presented.apiKey !== undefined) {
    const key = await verified(store, 'api_key', presented.apiKey, presented.names ?? headerNames);
    caller.apiKey = { id: key.id, accountId: key.accountId };
    caller.rateKey = `key:${key.id}`;
  }
  return caller;
}

/**
 * The caller as far as their credentials check out, and what is wrong with the rest: for gates that must not refuse a
 * request over a bad credential (MCP protocol methods), while the tool call that needs it reports it.
 */
export async function inspect(store: Store, presented: Presented): Promise<{ caller: Caller; problem: ServiceError | undefined }> {
  try {
    return { caller: await resolve(store, presented), problem: undefined };
  } catch (error) {
    // Only a bad credential is noted; anything else (the database away) fails the request.
    if (!(error instanceof ServiceError) || (error.code !== 'invalid_api_key' && error.code !== 'invalid_bearer_token')) throw error;
    const usable = { ...presented, apiKey: error.code === 'invalid_api_key' ? undefined : presented.apiKey, bearerToken: error.code === 'invalid_bearer_token' ? undefined : presented.bearerToken };
    const rest = await inspect(store, usable);
    // Both secrets bad: say both, so fixing one does not hide the other.
    return { caller: rest.caller, problem: rest.problem ? new ServiceError(error.code, `${error.message} ${rest.problem.message}`) : error };
  }
}

/** The caller nobody vouched for. */
export const anonymous = (origin: string): Caller => ({ rateKey: `origin:${origin}` });
