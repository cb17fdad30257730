import * as Keys from '../../auth/Keys.js';
import type { SecretKind } from '../../auth/Secret.js';
import { ServiceError } from '../../errors/ServiceError.js';
import type { Store } from '../../store/Store.js';
import { type Command, UsageError, type Values, jsonOption, number, required, text } from '../Command.js';

export const accountsCreate: Command = {
  name: 'accounts create',
  summary: 'Create an account (a caller who holds API keys and balances, or an owner or team member).',
  usage: 'accounts create NAME [--email EMAIL]',
  options: { email: { type: 'string' }, ...jsonOption },
  positionals: { min: 1, max: 1 },
  async run({ services, out }, { values, positionals }) {
    const account = await (await services()).store.accounts.create({ name: positionals[0]!, email: text(values, 'email') });
    if (values.json) out.json(account);
    else out.line(`created account ${account.name} (${account.id})`);
  },
};

export const accountsList: Command = {
  name: 'accounts list',
  summary: 'List accounts with their unlock and credit balances.',
  usage: 'accounts list [--json]',
  options: jsonOption,
  async run({ services, out }, { values }) {
    const rows = await (await services()).store.accounts.list();
    if (values.json) out.json(rows);
    else out.table(rows.map((a) => ({ id: a.id, name: a.name, email: a.email, unlocks: a.unlockBalance, credits: a.creditBalance })));
  },
};

const startingBalance = { create: { type: 'boolean' }, credits: { type: 'string' }, unlocks: { type: 'string' } } as const;

/** A starting balance given with a new key: whole, non-negative numbers of credits and unlocks. */
function grantOf(values: Values): { unlocks: number; credits: number } {
  const limit = { integer: true, min: 0, max: 1_000_000_000 };
  return { unlocks: number(values, 'unlocks', limit) ?? 0, credits: number(values, 'credits', limit) ?? 0 };
}

/** How a kind of credential is named in its commands: the command word, one of them and several, and how it is sent. */
type CredentialWords = { kind: SecretKind; word: 'keys' | 'tokens'; one: string; several: string; use: string };

function credentialCommands({ kind, word, one, several, use }: CredentialWords): Command[] {
  return [
    {
      name: `${word} create`,
      summary:
        kind === 'api_key'
          ? `Create ${one} for an account (--create makes the account if it is new; --credits/--unlocks grant a starting balance); the secret is printed once and stored only as a hash.`
          : `Create ${one} for an account; the secret is printed once and stored only as a hash.`,
      usage: kind === 'api_key' ? `${word} create --account NAME [--create] [--credits N] [--unlocks N] [--label LABEL] [--json]` : `${word} create --account NAME [--label LABEL] [--json]`,
      options: { account: { type: 'string' }, label: { type: 'string' }, ...(kind === 'api_key' && startingBalance), ...jsonOption },
      async run({ services, out }, { values }) {
        const { store } = await services();
        const grant = kind === 'api_key' ? grantOf(values) : { unlocks: 0, credits: 0 };
        const name = required(values, 'account');
        const label = text(values, 'label');
        // Account, key and starting balance land together or not at all.
        const { account, credential, token } = await store.transaction(async (tx) => {
          const existing = await tx.accounts.find(name);
          if (!existing && !values.create) throw new ServiceError('not_found', `no account "${name}"${kind === 'api_key' ? ' (add --create to make it)' : ''}`);
          const holder = existing ?? (await tx.accounts.create({ name }));
          if (grant.unlocks !== 0 || grant.credits !== 0) {
            await tx.ledger.move({ accountId: holder.id, kind: 'grant', unlocksDelta: grant.unlocks, creditsDelta: grant.credits, memo: 'starting balance with a new key' });
          }
          const account = await tx.accounts.get(holder.id);
          return { account, ...(await Keys.issue(tx, { kind, accountId: holder.id, label })) };
        });
        if (values.json) out.json({ ...credential, token, account: { name: account.name, unlockBalance: account.unlockBalance, creditBalance: account.creditBalance } });
        else {
          out.line(`created ${one} ${credential.id} for ${account.name} (${account.unlockBalance} unlocks, ${account.creditBalance} credits). Shown once, store it now:`);
          out.line(token);
          out.line(use);
        }
      },
    },
    {
      name: `${word} list`,
      summary: `List ${several} (never their secrets).`,
      usage: `${word} list [--account NAME] [--json]`,
      options: { account: { type: 'string' }, ...jsonOption },
      async run({ services, out }, { values }) {
        const { store } = await services();
        const account = text(values, 'account');
        const rows = await store.credentials.list(kind, account === undefined ? undefined : (await store.accounts.get(account)).id);
        const name = await accountNames(store);
        if (values.json) out.json(rows.map((c) => ({ ...c, accountName: name(c.accountId) })));
        else
          out.table(
            rows.map((c) => ({
              id: c.id,
              account: name(c.accountId),
              label: c.label,
              created: new Date(c.createdAt).toISOString(),
              lastUsed: c.lastUsedAt && new Date(c.lastUsedAt).toISOString(),
              revoked: c.revokedAt && new Date(c.revokedAt).toISOString(),
            })),
          );
      },
    },
    {
      name: `${word} revoke`,
      summary: `Revoke ${one}; requests presenting it get 401 from then on.`,
      usage: `${word} revoke ID`,
      positionals: { min: 1, max: 1 },
      async run({ services, out }, { positionals }) {
        const credential = await (await services()).store.credentials.revoke(kind, positionals[0]!);
        out.line(`revoked ${one} ${credential.id}`);
      },
    },
  ];
}

export const keyCommands = credentialCommands({ kind: 'api_key', word: 'keys', one: 'an API key', several: 'API keys', use: 'send it as the service-api-key header' });
export const tokenCommands = credentialCommands({ kind: 'bearer_token', word: 'tokens', one: 'a bearer token', several: 'bearer tokens', use: 'send it as Authorization: Bearer <token>' });

export const creditsGrant: Command = {
  name: 'credits grant',
  summary: "Add unlocks and/or credits to an account's balances (negative amounts take them back), with a ledger entry.",
  usage: 'credits grant ACCOUNT [--unlocks N] [--credits N] [--memo TEXT]',
  options: { unlocks: { type: 'string' }, credits: { type: 'string' }, memo: { type: 'string' }, ...jsonOption },
  positionals: { min: 1, max: 1 },
  async run({ services, out }, { values, positionals }) {
    const { store } = await services();
    const limit = { integer: true, min: -1_000_000_000, max: 1_000_000_000 };
    const unlocks = number(values, 'unlocks', limit) ?? 0;
    const credits = number(values, 'credits', limit) ?? 0;
    if (unlocks === 0 && credits === 0) throw new UsageError('give --unlocks and/or --credits');
    const account = await store.accounts.get(positionals[0]!);
    if (account.unlockBalance + unlocks < 0 || account.creditBalance + credits < 0) {
      throw new ServiceError('insufficient_balance', `cannot take that much: ${account.name} has ${account.unlockBalance} unlocks and ${account.creditBalance} credits`);
    }
    const entry = await store.ledger.move({ accountId: account.id, kind: 'grant', unlocksDelta: unlocks, creditsDelta: credits, memo: text(values, 'memo') ?? '' });
    const after = await store.accounts.get(account.id);
    if (values.json) out.json({ ledgerId: entry, account: after });
    else out.line(`${after.name}: ${after.unlockBalance} unlocks, ${after.creditBalance} credits (ledger #${entry})`);
  },
};

export const ledger: Command = {
  name: 'ledger',
  summary: 'Show the newest ledger entries: grants, charges, reversals and creator earnings.',
  usage: 'ledger [--account NAME] [--limit N] [--json]',
  options: { account: { type: 'string' }, limit: { type: 'string' }, ...jsonOption },
  async run({ services, out }, { values }) {
    const { store } = await services();
    const account = text(values, 'account');
    const rows = await store.ledger.entries({
      accountId: account === undefined ? undefined : (await store.accounts.get(account)).id,
      limit: number(values, 'limit', { min: 1, integer: true }) ?? 50,
    });
    const name = await accountNames(store);
    if (values.json) out.json(rows.map((e) => ({ ...e, accountName: e.accountId === null ? null : name(e.accountId) })));
    else
      out.table(
        rows.map((e) => ({
          id: e.id,
          at: new Date(e.createdAt).toISOString(),
          kind: e.kind,
          account: e.accountId === null ? null : name(e.accountId),
          unlocks: e.unlocksDelta,
          credits: e.creditsDelta,
          usd: e.usdMicros / 1_000_000,
          query: e.queryId,
          memo: e.memo,
        })),
      );
  },
};

/** Accounts by name, as people know them: an id no account has (a deleted one) is shown as it is. */
async function accountNames(store: Store): Promise<(id: string) => string> {
  const names = new Map((await store.accounts.list()).map((a) => [a.id, a.name]));
  return (id) => names.get(id) ?? id;
}
