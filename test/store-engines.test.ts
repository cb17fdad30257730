import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import * as Keys from '../src/auth/Keys.js';
import * as Demo from '../src/demo/Demo.js';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as TermModel from '../src/retrieval/terms/TermModel.js';
import * as Text from '../src/retrieval/Text.js';
import { ServiceError } from '../src/errors/ServiceError.js';
import * as Migrations from '../src/store/Migrations.js';
import { Unavailable } from '../src/store/Sql.js';
import * as Stores from '../src/store/Store.js';
import type { OpenStore } from '../src/store/Store.js';
import * as Engines from './support/Engines.js';

/** The same cases on every engine: callers of the Store cannot tell which one holds their data. */
describe.each(Engines.engines)('Store on %s', (engine) => {
  let store: OpenStore;
  let target: Awaited<ReturnType<typeof Engines.fresh>>;

  beforeAll(async () => {
    target = await Engines.fresh(engine);
    store = (await Stores.open(target.target)).store;
  });
  afterAll(async () => {
    await store?.close();
    await target?.drop();
  });

  const code = async (work: Promise<unknown>) => {
    try {
      await work;
    } catch (error) {
      return error instanceof ServiceError ? error.code : String(error);
    }
    return 'no error';
  };

  test('behavior: a store opened again applies no migration twice, and reports every version applied', async () => {
    const again = await Stores.open(target.target);
    expect(again.created).toBe(false);
    await again.store.close();
    expect(await store.meta.get('search_index_version')).toBe('1');
  });

  test('behavior: several processes opening one new store at once migrate it once', async () => {
    const other = await Engines.fresh(engine);
    try {
      // One SQLite file takes one writer at a time, and in one thread a second would wait on the first forever: its
      // starters are shown one after another (BEGIN IMMEDIATE keeps processes apart); PostgreSQL's all at once.
      const open = () => Stores.open(other.target);
      const opened = engine === 'postgres' ? await Promise.all([open(), open(), open()]) : [await open(), await open(), await open()];
      // SQLite says which call made the file; on PostgreSQL exactly one applied the first migration.
      if (engine === 'postgres') expect(opened.filter((o) => o.created)).toHaveLength(1);
      await Promise.all(opened.map((o) => o.store.close()));
      const reopened = await Stores.open(other.target);
      expect(await reopened.store.meta.get('answer_markers_since')).toMatch(/^\d+$/);
      await reopened.store.close();
    } finally {
      await other.drop();
    }
    // Numbered from 1 without a gap.
    expect(Migrations.migrations.map((m) => m.version)).toEqual(Migrations.migrations.map((_, i) => i + 1));
  });

  test('behavior: accounts are created, found by id or name, listed; a taken name is a conflict', async () => {
    const made = await store.accounts.create({ name: 'ada', email: 'ada@example.org' });
    expect(made).toMatchObject({ name: 'ada', email: 'ada@example.org', unlockBalance: 0, creditBalance: 0 });
    expect(await store.accounts.find(made.id)).toEqual(made);
    expect(await store.accounts.find('ada')).toEqual(made);
    expect(await code(store.accounts.create({ name: 'ada' }))).toBe('conflict');
    expect(await code(store.accounts.create({ name: 'Not Valid' }))).toBe('invalid_request');
    expect((await store.accounts.list()).map((a) => a.name)).toContain('ada');
  });

  test('behavior: a key is verified by its secret, recorded as used, and refused once revoked', async () => {
    const account = await store.accounts.create({ name: 'keyholder' });
    const { credential, token } = await Keys.issue(store, { kind: 'api_key', accountId: account.id, label: 'ci' });
    expect(credential).toMatchObject({ kind: 'api_key', accountId: account.id, label: 'ci', revokedAt: null });
    const verified = await Keys.verify(store, 'api_key', token);
    expect(verified?.id).toBe(credential.id);
    expect((await store.credentials.find('api_key', credential.id))?.lastUsedAt).toBeGreaterThan(0);
    expect(await Keys.verify(store, 'bearer_token', token)).toBeUndefined();
    expect(await Keys.verify(store, 'api_key', `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).toBeUndefined();
    await store.credentials.revoke('api_key', credential.id);
    expect(await Keys.verify(store, 'api_key', token)).toBeUndefined();
    expect(await code(store.credentials.revoke('api_key', credential.id))).toBe('conflict');
    expect((await store.credentials.list('api_key', account.id)).map((c) => c.id)).toEqual([credential.id]);
  });

  test('behavior: profiles resolve by slug or alias in any case; a taken or reserved handle is refused', async () => {
    const owner = await store.accounts.create({ name: 'owner' });
    const profile = await store.profiles.create({ slug: 'maria-lind', name: 'Maria Lind', visibility: 'public', directory: true, ownerAccountId: owner.id });
    expect(profile).toMatchObject({ slug: 'maria-lind', directory: true, ownerAccountId: owner.id });
    await store.profiles.addAlias(profile.id, 'mlind');
    expect((await store.profiles.byHandle('MLIND'))?.id).toBe(profile.id);
    expect(await store.profiles.byHandle('nobody-here')).toBeUndefined();
    expect(await store.profiles.aliases(profile.id)).toEqual(['mlind']);
    expect(await code(store.profiles.create({ slug: 'mlind', name: 'X', visibility: 'public' }))).toBe('conflict');
    expect(await code(store.profiles.addAlias(profile.id, 'maria-lind'))).toBe('conflict');
    expect(await code(store.profiles.create({ slug: 'api', name: 'X', visibility: 'public' }))).toBe('invalid_request');
    expect((await store.profiles.directoryPage({ offset: 0, limit: 10 })).profiles.map((p) => p.slug)).toContain('maria-lind');
    const hidden = await store.profiles.update(profile.id, { visibility: 'private', directory: false });
    expect(hidden).toMatchObject({ visibility: 'private', directory: false });
    expect((await store.profiles.directoryPage({ offset: 0, limit: 10 })).profiles.map((p) => p.slug)).not.toContain('maria-lind');
    const member = await store.accounts.create({ name: 'member' });
    await store.profiles.addMember(profile.id, member.id);
    await store.profiles.addMember(profile.id, member.id);
    expect(await store.profiles.members(profile.id)).toEqual([member.id]);
    expect(await store.profiles.isTeam(hidden, member.id)).toBe(true);
    await store.profiles.grantAccess(profile.id, owner.id);
    expect(await store.profiles.isGranted(hidden, owner.id)).toBe(true);
    expect(await store.profiles.revokeAccess(profile.id, owner.id)).toBe(true);
    expect(await store.profiles.grants(profile.id)).toEqual([]);
  });

  test('behavior: channels keep their settings and sync state; one sync holds a channel at a time', async () => {
    const profile = await store.profiles.create({ slug: 'chan-owner', name: 'Chan', visibility: 'public' });
    const channel = await store.channels.create({ id: 'ch_feed', profileId: profile.id, kind: 'rss', label: 'Feed', accessLevel: 'public', ratePerMillionTokens: 2.5, sourceUrl: 'https://example.org/feed', settings: { a: 1 } });
    expect(channel).toMatchObject({ id: 'ch_feed', ratePerMillionTokens: 2.5, status: 'live', settings: { a: 1 }, syncState: {} });
    expect(await code(store.channels.create({ id: 'ch_feed', profileId: profile.id, kind: 'rss', label: 'Feed', accessLevel: 'public', ratePerMillionTokens: 1 }))).toBe('conflict');
    expect((await store.channels.byProfiles()).get(profile.id)?.map((c) => c.id)).toEqual(['ch_feed']);
    const claims = await Promise.all([1, 2, 3].map(() => store.channels.claimSync('ch_feed', { now: 1_000, expired: () => false })));
    const held = claims.filter((c) => c !== undefined);
    expect(held).toHaveLength(1);
    const { holder } = held[0]!;
    expect(await store.channels.heartbeat('ch_feed', holder, 2_000)).toBe(true);
    expect(await store.channels.heartbeat('ch_feed', 'sync_other', 2_000)).toBe(false);
    expect((await store.channels.get('ch_feed')).syncState).toMatchObject({ holder, heartbeatAt: 2_000 });
    const done = await store.channels.finishSync('ch_feed', holder, { now: 3_000, source: { etag: 'x' }, listed: ['a', 'b'] });
    expect(done).toMatchObject({ status: 'live', lastSyncedAt: 3_000, lastError: null, syncState: { source: { etag: 'x' } } });
    expect(await store.channels.lastListed('ch_feed', 'source')).toEqual(['a', 'b']);
    const moved = await store.channels.setSource('ch_feed', { sourceUrl: 'https://example.org/other' });
    expect(moved.syncState).toEqual({});
    expect(await store.channels.lastListed('ch_feed', 'source')).toBeUndefined();
    expect(await code(store.channels.update('ch_feed', { ratePerMillionTokens: -1 }))).toBe('invalid_request');
    expect((await store.channels.update('ch_feed', { status: 'paused' })).status).toBe('paused');
  });

  test('behavior: lists come back in the order of their bytes on every engine: slugs apart by punctuation, channels made in the same millisecond', async () => {
    let profile;
    vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 });
    try {
      profile = await store.profiles.create({ slug: 'order-ab', name: 'B', visibility: 'public' });
      await store.profiles.create({ slug: 'order-a-c', name: 'C', visibility: 'public' });
      for (const id of ['ch_orderb', 'ch_order_c']) await store.channels.create({ id, profileId: profile.id, kind: 'rss', label: id, accessLevel: 'public', ratePerMillionTokens: 1 });
    } finally {
      vi.useRealTimers();
    }
    expect((await store.profiles.list()).map((p) => p.slug).filter((slug) => slug.startsWith('order-'))).toEqual(['order-a-c', 'order-ab']);
    expect((await store.channels.byProfile(profile.id)).map((c) => c.id)).toEqual(['ch_order_c', 'ch_orderb']);
    expect((await store.channels.byProfiles()).get(profile.id)?.map((c) => c.id)).toEqual(['ch_order_c', 'ch_orderb']);
  });

  test('behavior: collections hold only their profile\'s channels', async () => {
    const profile = await store.profiles.create({ slug: 'coll-owner', name: 'Coll', visibility: 'public' });
    const other = await store.profiles.create({ slug: 'coll-other', name: 'Other', visibility: 'public' });
    await store.channels.create({ id: 'ch_coll_a', profileId: profile.id, kind: 'rss', label: 'A', accessLevel: 'public', ratePerMillionTokens: 0 });
    await store.channels.create({ id: 'ch_coll_b', profileId: other.id, kind: 'rss', label: 'B', accessLevel: 'public', ratePerMillionTokens: 0 });
    const made = await store.collections.create({ profileId: profile.id, slug: 'best', name: 'Best', channelIds: ['ch_coll_a'] });
    expect(made.channelIds).toEqual(['ch_coll_a']);
    expect(await code(store.collections.create({ profileId: profile.id, slug: 'worse', name: 'W', channelIds: ['ch_coll_b'] }))).toBe('invalid_request');
    expect(await store.collections.find(profile.id, 'worse')).toBeUndefined();
    expect(await code(store.collections.create({ profileId: profile.id, slug: 'best', name: 'Again', channelIds: [] }))).toBe('conflict');
    expect((await store.collections.byProfile(profile.id)).map((c) => c.slug)).toEqual(['best']);
  });

  test('behavior: concurrent holds on one balance never overdraw it, and each landed hold has its ledger row', async () => {
    const account = await store.accounts.create({ name: 'spender' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 10 });
    const results = await Promise.allSettled(Array.from({ length: 25 }, (_, i) => store.ledger.move({ accountId: account.id, kind: 'query_charge', creditsDelta: -1, queryId: `q${i}` })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as ServiceError).code).toBe('insufficient_balance');
    expect((await store.accounts.get(account.id)).creditBalance).toBe(0);
    expect((await store.ledger.entries({ accountId: account.id })).filter((e) => e.kind === 'query_charge')).toHaveLength(10);
    expect(await code(store.ledger.move({ accountId: 'acct_missing', kind: 'grant', creditsDelta: 1 }))).toBe('not_found');
  });

  test('behavior: a transaction that throws leaves nothing behind; a nested one rolls back alone', async () => {
    await expect(
      store.transaction(async (tx) => {
        await tx.accounts.create({ name: 'ghost' });
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await store.accounts.find('ghost')).toBeUndefined();
    await store.transaction(async (tx) => {
      await tx.accounts.create({ name: 'kept' });
      await tx.transaction(async (inner) => {
        await inner.accounts.create({ name: 'dropped' });
        throw new Error('inner only');
      }).catch(() => undefined);
    });
    expect(await store.accounts.find('kept')).toBeDefined();
    expect(await store.accounts.find('dropped')).toBeUndefined();
  });

  test('behavior: a charge is either answered or reversed, once, however the two race', async () => {
    const account = await store.accounts.create({ name: 'racer' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', unlocksDelta: 5 });
    for (let i = 0; i < 5; i++) {
      const queryId = `race${i}`;
      await store.ledger.move({ accountId: account.id, kind: 'query_charge', unlocksDelta: -1, queryId });
      const [answered, reversed] = await Promise.allSettled([
        store.charges.markAnswered({ accountId: account.id, queryId }),
        store.charges.reverse({ accountId: account.id, queryId, reason: 'test' }),
      ]);
      const standing = await store.charges.standing(queryId);
      if (standing === 'answered') expect(reversed).toMatchObject({ status: 'fulfilled', value: undefined });
      else expect([standing, answered.status]).toEqual(['reversed', 'rejected']);
    }
    const balance = (await store.accounts.get(account.id)).unlockBalance;
    const reversals = (await store.ledger.entries({ accountId: account.id })).filter((e) => e.kind === 'query_reversal').length;
    expect(balance).toBe(reversals);
  });

  test('behavior: orphaned charges are reversed once even when two processes reconcile at once', async () => {
    const since = Date.now();
    const account = await store.accounts.create({ name: 'orphaned' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 3 });
    for (const q of ['o1', 'o2', 'o3']) await store.ledger.move({ accountId: account.id, kind: 'query_charge', creditsDelta: -1, queryId: q });
    await store.charges.markAnswered({ accountId: account.id, queryId: 'o2' });
    const window = { since, before: Date.now() + 1_000, why: () => 'test' };
    const [a, b] = await Promise.all([store.charges.reverseOrphans(window), store.charges.reverseOrphans(window)]);
    expect(a + b).toBe(2);
    expect((await store.accounts.get(account.id)).creditBalance).toBe(2);
  });

  test('behavior: a payment credential is spent once, a transfer accounted for once, a credit consumed once', async () => {
    const base = { rail: 'tempo' as const, wallet: '0xAbC', requestDigest: 'd', amountMillicents: 100 };
    const spends = await Promise.all([1, 2, 3].map((n) => store.payments.reserve({ ...base, id: `pay_a${n}`, spendKey: 'key-a', queryId: `qa${n}` })));
    expect(spends.filter(Boolean)).toHaveLength(1);
    // A transfer the payer broadcast is its own spend key: the same one presented three times at once is taken once.
    const transfers = await Promise.all([1, 2, 3].map((n) => store.payments.reserve({ ...base, id: `pay_t${n}`, spendKey: '0xfeed', transfer: '0xFEED', queryId: `qt${n}` })));
    expect(transfers.filter(Boolean)).toHaveLength(1);
    const paid = transfers.findIndex(Boolean) + 1;
    // Its money moved before it was presented: it is recorded settled, with its transfer, at once.
    expect(await store.payments.get(`pay_t${paid}`)).toMatchObject({ state: 'settled', txHash: '0xFEED' });
    expect(await store.payments.reserve({ ...base, id: 'pay_again', spendKey: 'key-again', transfer: '0xfeed', queryId: 'qagain' })).toBe(false);
    const row = (await store.payments.get(`pay_t${paid}`))!;
    expect(row).toMatchObject({ state: 'settled', wallet: '0xabc', amountMillicents: 100 });
    // Two processes crediting one payment at once: the one that moves it grants the credit, the other finds it moved.
    const credits = await Promise.all([store.payments.creditWallet(row.id, { from: ['settled'], reason: 'r' }), store.payments.creditWallet(row.id, { from: ['settled'], reason: 'r' })]);
    expect(credits.filter((c) => c !== undefined)).toHaveLength(1);
    expect((await store.payments.get(row.id))?.state).toBe('credited');
    const credit = (await store.payments.openCredit('tempo', '0xABC'))!;
    expect(credit.id).toBe(credits.find((c) => c !== undefined));
    await store.payments.reserve({ ...base, id: 'pay_c1', spendKey: 'key-c1', queryId: 'qc1' });
    await store.payments.reserve({ ...base, id: 'pay_c2', spendKey: 'key-c2', queryId: 'qc2' });
    const consumed = await Promise.all([store.payments.consumeCredit(credit.id, 'pay_c1'), store.payments.consumeCredit(credit.id, 'pay_c2')]);
    expect(consumed.filter(Boolean)).toHaveLength(1);
    expect(await store.payments.bindCredential({ spendKey: 's1', rail: 'tempo', challengeId: 'c1' })).toBe('c1');
    expect(await store.payments.bindCredential({ spendKey: 's1', rail: 'tempo', challengeId: 'c2' })).toBe('c1');
    expect((await store.payments.recent({ wallet: '0xABC', limit: 50 })).length).toBeGreaterThan(0);
    expect((await store.payments.unfinished({ cutoff: Date.now() + 1_000 })).map((p) => p.id)).toContain('pay_a' + (spends.findIndex(Boolean) + 1));
  });

  test('behavior: text holding a NUL character is kept (PostgreSQL stores it as U+FFFD) and a name holding one names nothing', async () => {
    const account = await store.accounts.create({ name: 'nul-writer' });
    await store.ledger.append({ kind: 'note', accountId: account.id, memo: 'before\u0000after' });
    expect(['before\u0000after', 'before\uFFFDafter']).toContain((await store.ledger.entries({ accountId: account.id }))[0]!.memo);
    expect(await store.profiles.byHandle('maria\u0000lind')).toBeUndefined();
  });

  test('behavior: instances starting together on a new store load the demo once, and every one of them starts', async () => {
    const other = await Engines.fresh(engine);
    try {
      const open = () => Stores.open(other.target);
      const load = (s: OpenStore) => Demo.loadOnFirstStart({ store: s }, { chunkTargetTokens: 320 });
      // One SQLite file takes one writer at a time, and in one thread the second would wait on the first forever.
      const together = engine === 'postgres';
      const opened = together ? await Promise.all([open(), open()]) : [await open(), await open()];
      const loads = together ? await Promise.all(opened.map(({ store: s }) => load(s))) : [await load(opened[0]!.store), await load(opened[1]!.store)];
      expect(loads.filter((l) => l !== undefined)).toHaveLength(1);
      expect((await opened[0]!.store.profiles.list()).length).toBe(loads.find((l) => l !== undefined)!.profiles);
      await Promise.all(opened.map(({ store: s }) => s.close()));
    } finally {
      await other.drop();
    }
  }, 60_000);

  test('behavior: a kept value is claimed once, whoever asks first', async () => {
    const claimed = await Promise.all(['a', 'b', 'c'].map((v) => store.meta.claim('shared_secret', v)));
    expect(new Set(claimed).size).toBe(1);
    await store.meta.set('shared_secret', 'z');
    expect(await store.meta.get('shared_secret')).toBe('z');
  });

  test('behavior: a large value is read back whole, byte for byte, under any id (quotes and backslashes included); none for one not written', async () => {
    const body = Uint8Array.from({ length: 3 * (1 << 20) + 12_345 }, (_, i) => (i * 2654435761) >>> 27);
    const id = "o'brien \\ snapshot ?";
    await store.snapshots.replace('search', { id, position: 1, header: '{}', createdAt: 1 }, body, 1 << 20);
    const parts = await Promise.all([0, 1, 2, 3].map((part) => store.snapshots.part('search', id, part)));
    // Compared as digests: a deep equality over 3 MB took 20 s, two thirds of the test's time on a loaded machine.
    const digest = (bytes: Uint8Array) => crypto.createHash('sha256').update(bytes).digest('hex');
    const read = Buffer.concat(parts.map((part) => part!));
    expect([read.length, digest(read)]).toEqual([body.length, digest(body)]);
    expect(await store.snapshots.part('search', id, 4)).toBeUndefined();
    expect(await store.snapshots.part('search', 'another', 0)).toBeUndefined();
    // The connections it read on answer the next statements.
    expect(await Promise.all([1, 2, 3].map(() => store.meta.get('search_index_version')))).toEqual(['1', '1', '1']);
    await store.snapshots.drop('search');
  });

  test.runIf(engine === 'postgres')('behavior: a store opened for DATABASE_POOL_SIZE connections keeps at most that many; statements beyond them wait their turn', async () => {
    const name = new URL((target.target as { url: string }).url).pathname.slice(1);
    const { open } = await import('../src/store/engines/Postgres.js');
    const admin = await open(Engines.adminUrl, { max: 1 });
    const connections = async () => Number((await admin.get<{ n: number }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = ?', [name]))!.n);
    try {
      for (const [size, most] of [[2, 2], [undefined, 10]] as const) {
        const opened = (await Stores.open(target.target, { connections: size })).store;
        const before = await connections();
        try {
          // Twelve at once: a pool opens a connection for each until it holds as many as it may.
          const read = await Promise.all(Array.from({ length: 12 }, () => opened.meta.get('search_index_version')));
          expect(read).toEqual(Array(12).fill('1'));
          expect((await connections()) - before).toBeLessThanOrEqual(most);
          expect((await connections()) - before).toBeGreaterThan(most - 2);
        } finally {
          await opened.close();
        }
      }
    } finally {
      await admin.close();
    }
  });

  test.runIf(engine === 'postgres')('error: a database that stops accepting connections (SQLSTATE 55000) is Unavailable, as a lost database is, and is back once it accepts them', async () => {
    const url = (target.target as { url: string }).url;
    const name = new URL(url).pathname.slice(1);
    const { open } = await import('../src/store/engines/Postgres.js');
    const engine = await open(url, { max: 1 });
    const admin = await open(Engines.adminUrl, { max: 1 });
    try {
      const { pid } = (await engine.get<{ pid: number }>('SELECT pg_backend_pid() AS pid'))!;
      await admin.run(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
      // Its open connection goes, so the next statement needs a new one.
      await admin.get('SELECT pg_terminate_backend(?)', [pid]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // (The first may still meet the ended connection: Unavailable too.)
      const refusals: unknown[] = [];
      for (let i = 0; i < 3; i++) refusals.push(await engine.get('SELECT 1 AS one').then(() => undefined, (error: unknown) => error));
      for (const refused of refusals) expect(refused).toBeInstanceOf(Unavailable);
      expect((refusals.at(-1) as Unavailable).detail).toMatch(/not currently accepting connections/);
    } finally {
      await admin.run(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      await admin.close();
    }
    try {
      expect(await engine.get<{ one: number }>('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      await engine.close();
    }
  });

  test.runIf(engine === 'postgres')('behavior: a migration\'s statements are neither prepared nor cut at the statement timeout, in its transactions too', async () => {
    const url = (target.target as { url: string }).url;
    const { open } = await import('../src/store/engines/Postgres.js');
    const engine = await open(url, { max: 1 });
    try {
      // The connection's prepared statements (its opening check made one) before and after a migration's.
      const [before, after] = await engine.migrating(async (sql) => {
        const names = () => sql.all<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name');
        const before = await names();
        await sql.get('SELECT 1 AS one');
        await sql.transaction(async (tx) => tx.transaction(async (inner) => inner.get('SELECT 2 AS two')));
        return [before, await names()];
      });
      expect(after).toEqual(before);
      // Outside a migration, statements are prepared once per connection (and bounded).
      await engine.get('SELECT 3 AS three');
      expect((await engine.all<{ name: string }>('SELECT name FROM pg_prepared_statements')).length).toBeGreaterThan(0);
    } finally {
      await engine.close();
    }
  });

  test.runIf(engine === 'postgres')('behavior: a transaction its process left standing (frozen mid-way) is ended by the server: its locks go, and nothing it wrote stands', async () => {
    const url = (target.target as { url: string }).url;
    const { open } = await import('../src/store/engines/Postgres.js');
    const frozen = await open(url, { max: 1, idleInTransactionMs: 300 });
    const other = await open(url, { max: 1 });
    try {
      await store.meta.set('idle_probe', 'before');
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      let locked!: () => void;
      const holding = new Promise<void>((resolve) => (locked = resolve));
      const standing = frozen.transaction(async (tx) => {
        await tx.run(`UPDATE meta SET value = 'inside' WHERE key = 'idle_probe'`);
        await tx.get('SELECT pg_advisory_xact_lock(4242)');
        locked();
        await resumed;
        await tx.run(`UPDATE meta SET value = 'after' WHERE key = 'idle_probe'`);
      });
      await holding;
      // The others wait for its row and its lock only until the server ends the idle transaction.
      expect(await other.run(`UPDATE meta SET value = 'other' WHERE key = 'idle_probe'`)).toBe(1);
      await other.get('SELECT pg_advisory_xact_lock(4242)');
      resume();
      await expect(standing).rejects.toBeInstanceOf(Unavailable);
      expect(await store.meta.get('idle_probe')).toBe('other');
      // The pool makes a new connection for what the process does next.
      expect(await frozen.get<{ one: number }>('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      await frozen.close();
      await other.close();
    }
  });
});

describe('Store on an unreachable PostgreSQL', () => {
  test('error: opening fails with Unavailable: a 503 to callers, the host and the cause to the operator', async () => {
    const error = (await Stores.open({ url: 'postgres://postgres:secret@127.0.0.1:9/none' }).catch((e: unknown) => e)) as InstanceType<typeof Stores.Unavailable>;
    expect(error).toBeInstanceOf(Stores.Unavailable);
    expect(error).toBeInstanceOf(ServiceError);
    expect([error.code, error.status, error.headers['Retry-After']]).toEqual(['service_unavailable', 503, '5']);
    expect(error.message).not.toMatch(/127\.0\.0\.1|none/);
    expect(error.detail).toMatch(/^cannot reach PostgreSQL at 127\.0\.0\.1:9\/none: .*ECONNREFUSED/);
    expect(error.detail).not.toContain('secret');
  });
});

/** Content, its search rows, the lexical index and the term model: the same on every engine. */
describe.each(Engines.engines)('content and search on %s', (engine) => {
  let store: OpenStore;
  let target: Awaited<ReturnType<typeof Engines.fresh>>;
  let channelId: string;

  const texts = [
    'The kettle boils water for tea in three minutes.',
    'Descale the kettle every month with vinegar and water.',
    'A bicycle chain needs oil after rain.',
    'Pump the bicycle tyres to four bar before a ride.',
    'Green tea brews best below boiling, around eighty degrees.',
    'Store the kettle empty so no scale builds up.',
  ];

  beforeAll(async () => {
    target = await Engines.fresh(engine);
    store = (await Stores.open(target.target)).store;
    const profile = await store.profiles.create({ slug: 'home', name: 'Home', visibility: 'public' });
    channelId = (await store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Notes', accessLevel: 'public', ratePerMillionTokens: 1 })).id;
    for (const [n, text] of texts.entries()) {
      await store.items.put(
        SearchTerms.indexed({ channelId, externalId: `note-${n}`, title: `Note ${n}`, contentHash: `h${n}`, publishedAt: n === 0 ? undefined : 1_700_000_000_000 + n, metadata: n === 1 ? { pendingText: { reason: 'no captions yet', next: 5 } } : {}, chunks: [{ text }] }),
      );
    }
  });
  afterAll(async () => {
    await store?.close();
    await target?.drop();
  });

  test('behavior: items are stored once per fingerprint, listed newest first (undated last), and counted', async () => {
    const again = await store.items.put(SearchTerms.indexed({ channelId, externalId: 'note-2', title: 'Note 2', contentHash: 'h2', chunks: [{ text: texts[2]! }] }));
    expect(again.outcome).toBe('unchanged');
    const listed = await store.items.byChannel(channelId);
    expect(listed.map((i) => i.externalId)).toEqual(['note-5', 'note-4', 'note-3', 'note-2', 'note-1', 'note-0']);
    expect(await store.items.counts(channelId)).toEqual({ items: 6, chunks: 6 });
    expect([...(await store.items.textNotes(channelId)).values()]).toEqual([expect.stringMatching(/^stand-in text; no captions yet; next try after 1970-01-01/)]);
    const item = (await store.items.withChunks(listed[0]!.id))!;
    expect(item.chunks.map((c) => c.text)).toEqual([texts[5]]);
    // A fresh store numbers chunks from 1 on both engines; rowids that name no chunk are left out.
    const rows = await store.chunks.rows([1, 2, 3, 4, 5, 6, 1000]);
    expect(rows).toHaveLength(6);
    expect(rows.find((r) => r.itemId === item.id)).toMatchObject({ channelId, title: 'Note 5', text: texts[5], ordinal: 0 });
  });

  test('behavior: the lexical index finds what was written, follows later writes and deletes, and weighs by the scope', async () => {
    const index = await LexicalIndex.open(store);
    const ask = async (question: string) => {
      const terms = Text.queryTerms(question);
      const hits = await index.search({ terms, text: question, channelIds: new Set([channelId]), limit: 3 });
      const rows = await store.chunks.rows(hits.map((h) => h.rowid));
      return hits.map((h) => rows.find((r) => r.rowid === h.rowid)!.text);
    };
    expect((await ask('how often to descale a kettle'))[0]).toBe(texts[1]);
    const written = await store.items.put(SearchTerms.indexed({ channelId, externalId: 'late', title: 'Late', contentHash: 'late', chunks: [{ text: 'Glimmerwort grows in shade.' }] }));
    expect(await ask('glimmerwort')).toEqual(['Glimmerwort grows in shade.']);
    await store.items.remove(written.itemId);
    expect(await ask('glimmerwort')).toEqual([]);
    const stats = await index.statistics(new Set([channelId]), [Text.stem('kettle')]);
    expect(stats.chunkCount).toBe(6);
    expect(stats.df(Text.stem('kettle'))).toBe(3);
    await store.channels.update(channelId, { status: 'paused' });
    expect(await ask('kettle')).toEqual([]);
    await store.channels.update(channelId, { status: 'live' });
    expect((await ask('kettle')).length).toBe(3);
  });

  test('behavior: the term model builds from the public chunks, reloads, and folds in new ones', async () => {
    const info = await TermModel.build(store, { dimensions: 4, seed: 3 });
    expect(info).toMatchObject({ chunks: 6, publicChunks: 6 });
    expect((await TermModel.load(store))?.info).toEqual(info);
    for (const [n, text] of ['Kettle scale dissolves in vinegar.', 'Vinegar and a kettle remove scale.'].entries()) {
      await store.items.put(SearchTerms.indexed({ channelId, externalId: `fold-${n}`, title: 'Fold', contentHash: `f${n}`, chunks: [{ text }] }));
    }
    expect((await TermModel.freshness(store)).publicChunks).toBe(8);
    expect((await TermModel.update(store))?.chunks).toBe(2);
    expect((await TermModel.update(store))?.chunks).toBe(0);
  });
});
