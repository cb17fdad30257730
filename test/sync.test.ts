import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { projectRoot } from '../src/config/Config.js';
import * as Connectors from '../src/sources/Connectors.js';
import * as Sync from '../src/sources/Sync.js';
import * as Scheduler from '../src/sources/Scheduler.js';
import type * as Channels from '../src/store/Channels.js';
import * as Items from '../src/store/Items.js';
import * as Stores from '../src/store/Store.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as FeedHost from './support/FeedHost.js';
import * as Sources from './support/Sources.js';

let host: Awaited<ReturnType<typeof FeedHost.start>>;
/** A store of its own for the CLI's runs: `sync` with no channel named syncs every channel of its store. */
let cliPlace: Awaited<ReturnType<typeof Engines.fresh>>;
let store: Stores.Store;
let profileId: string;
let fixture: Awaited<ReturnType<typeof Sources.store>>;
let deps: Awaited<ReturnType<typeof Sources.store>>['deps'];
let logLines: string[];

beforeAll(async () => {
  host = await FeedHost.start();
  fixture = await Sources.store('sync');
  ({ store, profileId, deps, logLines } = fixture);
  cliPlace = await Engines.fresh(Engines.current, 'sync-cli');
});
afterAll(async () => {
  await fixture.close();
  await cliPlace.drop();
  await host.close();
});

/** The text of an item's chunks, in order, joined by `separator`. */
async function textOf(itemId: string, separator = '\n'): Promise<string | undefined> {
  return (await store.items.withChunks(itemId))?.chunks.map((c) => c.text).join(separator);
}

type Post = { guid: string; title: string; date: string; html?: string; summary?: string; link?: string };
const paragraph = (topic: string) =>
  `<p>${topic} is the subject of this post. It needs enough words to count as a whole article rather than a teaser, so here are several sentences about ${topic}, its history, its practice and what readers asked about it.</p>`;

function rss(posts: Post[]): string {
  const items = posts
    .map(
      (p) => `<item><title>${p.title}</title><link>${p.link ?? `/posts/${p.guid}`}</link><guid isPermaLink="false">${p.guid}</guid>
      <pubDate>${new Date(p.date).toUTCString()}</pubDate><dc:creator>Wren Writer</dc:creator>
      ${p.summary !== undefined ? `<description><![CDATA[${p.summary}]]></description>` : ''}
      ${p.html !== undefined ? `<content:encoded><![CDATA[${p.html}]]></content:encoded>` : ''}</item>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>Wren's Notes</title><link>${host.url}/</link><description>Essays</description>
${items}
</channel></rss>`;
}

let counter = 0;
/** A new rss channel pointed at a feed route of its own. */
async function channel(posts: Post[], options: { accessLevel?: 'public' | 'private' } = {}): Promise<{ id: string; feed: string }> {
  const id = `ch_feed_${++counter}`;
  const feed = `/feeds/${id}.xml`;
  host.routes.set(feed, { body: rss(posts), type: 'application/rss+xml; charset=utf-8' });
  await store.channels.create({ id, profileId, kind: 'rss', label: `Feed ${counter}`, accessLevel: options.accessLevel ?? 'public', ratePerMillionTokens: 1, sourceUrl: `${host.url}${feed}` });
  return { id, feed };
}

const posts: Post[] = [
  { guid: 'p3', title: 'Winter &amp; cold starts', date: '2025-03-01', html: `<h2>Cold</h2>${paragraph('Cold proofing')}<ul><li>Retard overnight</li><li>Bake cold</li></ul>` },
  { guid: 'p2', title: 'Hydration', date: '2025-02-01', html: paragraph('Dough hydration') },
  { guid: 'p1', title: 'Starters', date: '2025-01-01', html: paragraph('A sourdough starter') },
];

beforeEach(() => {
  logLines.length = 0;
});

describe('sync with an rss source', () => {
  test('behavior: the first sync indexes every entry with title, canonical URL, date, author and structured text', async () => {
    const { id } = await channel(posts);
    const report = await Sync.syncChannel(deps(), id);
    expect(report).toMatchObject({ outcome: 'synced', created: 3, updated: 0, unchanged: 0, removed: 0, failed: 0 });
    const items = await store.items.byChannel(id);
    expect(items.map((i) => i.title)).toEqual(['Winter & cold starts', 'Hydration', 'Starters']);
    expect(items[0]).toMatchObject({ sourceUrl: `${host.url}/posts/p3`, publishedAt: Date.parse('2025-03-01'), author: 'Wren Writer', externalId: 'p3' });
    const text = await textOf(items[0]!.id);
    expect(text).toContain('Cold');
    expect(text).toContain('- Retard overnight');
    const stored = await store.channels.get(id);
    expect(stored).toMatchObject({ status: 'live', lastError: null });
    expect(stored.lastSyncedAt).toBeGreaterThan(0);
    expect(logLines.some((l) => l.includes('"sync finished"'))).toBe(true);
  });

  test('behavior: an unchanged feed is a conditional request answered 304, and nothing is rewritten', async () => {
    const { id } = await channel(posts);
    await Sync.syncChannel(deps(), id);
    const before = (await store.items.byChannel(id)).map((i) => i.updatedAt);
    const report = await Sync.syncChannel(deps(), id);
    expect(report.outcome).toBe('unchanged');
    expect(host.requests.at(-1)!.headers['if-none-match']).toBeDefined();
    expect((await store.items.byChannel(id)).map((i) => i.updatedAt)).toEqual(before);
  });

  test('behavior: edited entries are re-chunked, unchanged ones skipped, deleted ones removed, scrolled-off ones kept', async () => {
    const older = { guid: 'p0', title: 'Flour', date: '2024-06-01', html: paragraph('Flour choice') };
    const { id, feed } = await channel([...posts, older]);
    await Sync.syncChannel(deps(), id);
    // p2 deleted by the author (inside the feed's window); p0 scrolled off the end (older than every listed entry).
    const edited = { ...posts[0]!, html: paragraph('Cold proofing, revised') };
    host.routes.get(feed)!.body = rss([edited, posts[2]!]);
    const report = await Sync.syncChannel(deps(), id);
    expect(report).toMatchObject({ outcome: 'synced', created: 0, updated: 1, unchanged: 1, removed: 1 });
    expect((await store.items.byChannel(id)).map((i) => i.externalId).sort()).toEqual(['p0', 'p1', 'p3']);
    expect((await store.items.withChunks(Items.itemId(id, 'p3')))!.chunks[0]!.text).toContain('revised');
  });

  test('behavior: an old entry surfacing again (pinned, re-dated) does not wipe the posts that scrolled off', async () => {
    const many: Post[] = [6, 5, 4, 3, 2, 1].map((n) => ({ guid: `s${n}`, title: `Post ${n}`, date: `2025-0${n}-01`, html: paragraph(`Topic ${n}`) }));
    const { id, feed } = await channel(many);
    await Sync.syncChannel(deps(), id);
    const newer: Post[] = [8, 7].map((n) => ({ guid: `s${n}`, title: `Post ${n}`, date: `2025-0${n}-01`, html: paragraph(`Topic ${n}`) }));
    host.routes.get(feed)!.body = rss([...newer, many[0]!, many[5]!]);
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ created: 2, removed: 0 });
    expect(await store.items.byChannel(id)).toHaveLength(8);
  });

  test('behavior: an entry with no text is not stored, as an empty upload is refused; it is named, fails nothing, and is read again once it changes', async () => {
    const empty = { guid: 'e1', title: 'Empty', date: '2025-05-01', summary: '', link: 'not a url' };
    const { id, feed } = await channel([empty, posts[1]!]);
    const report = await Sync.syncChannel(deps(), id);
    expect(report).toMatchObject({ created: 1, empty: 1, failed: 0 });
    expect((await store.items.byChannel(id)).map((i) => i.externalId)).toEqual(['p2']);
    expect((await store.channels.get(id)).lastError).toMatch(/1 entries have no text to index and are not indexed until they change; first: e1/);
    expect((await Sync.syncChannel(deps(), id)).outcome).toBe('unchanged');
    // The feed changes elsewhere: the empty entry is not read again, nor reported again.
    host.routes.set(feed, { body: rss([empty, posts[1]!, posts[2]!]), type: 'application/rss+xml' });
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ created: 1, unchanged: 1, empty: 0 });
    expect((await store.channels.get(id)).lastError).toBeNull();
    // It gains text: now it is indexed. Emptied again, its item goes.
    host.routes.set(feed, { body: rss([{ ...empty, summary: 'Now it has words.' }, posts[1]!, posts[2]!]), type: 'application/rss+xml' });
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ created: 1, empty: 0 });
    host.routes.set(feed, { body: rss([{ ...empty, summary: ' ' }, posts[1]!, posts[2]!]), type: 'application/rss+xml' });
    const emptied = await Sync.syncChannel(deps(), id);
    expect(emptied, JSON.stringify(emptied)).toMatchObject({ empty: 1, removed: 1 });
    expect((await store.items.byChannel(id)).map((i) => i.externalId).sort()).toEqual(['p1', 'p2']);
  });

  test('behavior: entries whose ids are named like Object.prototype members are remembered like any other', async () => {
    const empties = ['__proto__', 'constructor', 'toString'].map((guid) => ({ guid, title: guid, date: '2025-05-01', summary: '', link: 'not a url' }));
    const { id, feed } = await channel([...empties, posts[1]!]);
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ created: 1, empty: 3, failed: 0 });
    expect(Object.keys((await store.channels.get(id)).syncState.empty as object).sort()).toEqual(['__proto__', 'constructor', 'toString']);
    host.routes.set(feed, { body: rss([...empties, posts[1]!, posts[2]!]), type: 'application/rss+xml' });
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ created: 1, unchanged: 1, empty: 0 });
  });

  test('behavior: pointing a channel at a new source forgets the old one\'s validators', async () => {
    const { id } = await channel(posts);
    await Sync.syncChannel(deps(), id);
    expect((await store.channels.get(id)).syncState.source).toBeDefined();
    host.routes.set('/feeds/moved.xml', { body: rss(posts.slice(0, 1)), type: 'application/rss+xml' });
    await store.channels.setSource(id, { sourceUrl: `${host.url}/feeds/moved.xml` });
    expect((await store.channels.get(id)).syncState.source).toBeUndefined();
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ outcome: 'synced', unchanged: 1 });
    expect(host.requests.at(-1)!.headers['if-none-match']).toBeUndefined();
  });

  test('behavior: a summary-only entry is indexed from its article, found by Readability', async () => {

    host.routes.set('/articles/long', {
      type: 'text/html; charset=utf-8',
      body: `<html><head><title>Long read | Wren</title><link rel="canonical" href="/2025/long-read"></head><body><nav>Home About Subscribe</nav><article><h1>Long read</h1>
        ${paragraph('Steam in the oven')}${paragraph('Scoring the loaf')}${paragraph('Cooling on a rack')}</article><footer>Copyright</footer></body></html>`,
    });
    const { id } = await channel([
      { guid: 'a1', title: 'Long read', date: '2025-04-01', summary: 'A teaser about steam.', link: `${host.url}/articles/long` },
      { guid: 'a2', title: 'Gone article', date: '2025-04-02', summary: 'Only this summary survives.', link: `${host.url}/articles/missing` },
    ]);
    const report = await Sync.syncChannel(deps(), id);
    expect(report).toMatchObject({ created: 2, failed: 0 });
    const textOfEntry = (guid: string) => textOf(Items.itemId(id, guid), ' ');
    expect(await textOfEntry('a1')).toContain('Scoring the loaf');
    expect(await textOfEntry('a1')).not.toContain('Subscribe');
    expect(await textOfEntry('a2')).toBe('Only this summary survives.');
    const meta = async (guid: string) => JSON.parse((await store.items.metadata(id, guid))!);
    expect((await meta('a1')).text).toBe('article');
    // The article's canonical URL replaces the feed's link; the summary-only item keeps its link.
    expect((await store.items.byChannel(id)).map((i) => [i.externalId, i.sourceUrl])).toEqual([
      ['a2', `${host.url}/articles/missing`],
      ['a1', `${host.url}/2025/long-read`],
    ]);
    expect((await meta('a2')).text).toBe('summary');
  });

  test('behavior: an article down for a moment: the new entry stands on its summary, and the next sync reads the article', async () => {
    host.routes.set('/articles/flaky', {
      type: 'text/html',
      body: `<html><head><title>Flaky</title></head><body><article>${paragraph('Oven spring')}${paragraph('Scoring')}${paragraph('Steam')}</article></body></html>`,
      failFirst: [{ status: 503 }],
    });
    const { id } = await channel([{ guid: 'f1', title: 'Flaky', date: '2025-04-03', summary: 'A teaser.', link: `${host.url}/articles/flaky` }]);
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ created: 1, provisional: 1, failed: 0 });
    const text = () => textOf(Items.itemId(id, 'f1'), ' ');
    expect(await text()).toBe('A teaser.');
    // Its real text is tried again after 15 minutes.
    expect(await Sync.syncChannel({ ...deps(), now: () => Date.now() + 16 * 60_000 }, id)).toMatchObject({ updated: 1, provisional: 0 });
    expect(await text()).toContain('Scoring');
  });

  test('error: a failing source is recorded on the channel with its time, and indexed content is kept', async () => {
    const { id, feed } = await channel(posts);
    await Sync.syncChannel(deps(), id);
    host.routes.set(feed, { body: 'down', status: 500 });
    const report = await Sync.syncChannel(deps(), id);
    expect(report).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('answered 500') });
    const stored = await store.channels.get(id);
    expect(stored).toMatchObject({ status: 'live', lastError: expect.stringContaining('answered 500') });
    expect(stored.lastErrorAt).toBeGreaterThan(0);
    expect(await store.items.byChannel(id)).toHaveLength(3);

    host.routes.set(feed, { body: '<html><body>Moved</body></html>', type: 'text/html' });
    expect((await Sync.syncChannel(deps(), id)).reason).toMatch(/is not a feed \(text\/html\)/);
    host.routes.set(feed, { body: rss([]), type: 'application/rss+xml' });
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ outcome: 'synced', removed: 0 });
    expect(await store.items.byChannel(id)).toHaveLength(3);
    expect((await store.channels.get(id)).lastError).toBeNull();
  });

  test('behavior: paused channels, channels without a source and upload channels are skipped without a request', async () => {
    const { id } = await channel(posts);
    await store.channels.update(id, { status: 'paused' });
    const before = host.requests.length;
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ outcome: 'skipped', reason: 'paused' });
    const upload = await store.channels.create({ profileId, kind: 'user_upload', label: 'Uploads', accessLevel: 'public', ratePerMillionTokens: 0 });
    expect((await Sync.syncChannel(deps(), upload.id)).reason).toMatch(/filled by upload/);
    const bare = await store.channels.create({ profileId, kind: 'rss', label: 'No source yet', accessLevel: 'public', ratePerMillionTokens: 0 });
    expect((await Sync.syncChannel(deps(), bare.id)).reason).toMatch(/no source configured/);
    expect(host.requests.length).toBe(before);
  });

  test('behavior: a sync holding a channel blocks another; one that died (no heartbeat) is taken over and resumes', async () => {
    const { id } = await channel(posts);
    const now = Date.now();
    expect(await store.channels.claimSync(id, { now, expired: (lease) => Sync.leaseExpired(lease, { now, staleMs: 60_000 }) })).toBeDefined();
    expect((await store.channels.get(id)).status).toBe('syncing');
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ outcome: 'skipped', reason: 'another sync is running' });
    // The holder (no process recorded: elsewhere) never finishes: once its heartbeat is old, its hold is stale.
    const later = deps({ now: () => now + 11 * 60_000 });
    expect(await Sync.syncChannel(later, id)).toMatchObject({ outcome: 'synced', created: 3 });
    expect((await store.channels.get(id)).status).toBe('live');
  });

  test('behavior: a lease ends at once when its holder\'s process here is gone, after a long silence when it still runs, and by heartbeat elsewhere', async () => {
    const exited = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => exited.once('exit', resolve));
    const now = Date.now();
    const expired = (lease: Channels.Lease) => Sync.leaseExpired(lease, { now, staleMs: 20_000 });
    expect(expired({ heartbeatAt: now, host: Sync.processHost, pid: exited.pid! })).toBe(true);
    expect(expired({ heartbeatAt: now - 5 * 60_000, host: Sync.processHost, pid: process.pid })).toBe(false);
    expect(expired({ heartbeatAt: now - 11 * 60_000, host: Sync.processHost, pid: process.pid })).toBe(true);
    // Same host name, another pid namespace (a container with host networking): its pids are not ours to ask.
    expect(expired({ heartbeatAt: now, host: `${os.hostname()}/pid:[1]`, pid: exited.pid! })).toBe(false);
    expect(expired({ heartbeatAt: now - 21_000, host: 'elsewhere', pid: 1 })).toBe(true);
  });

  test('behavior: a sync whose hold was taken over stops, and cannot mark the channel live under the new holder', async () => {
    const { id } = await channel(posts);
    const now = Date.now();
    const first = (await store.channels.claimSync(id, { now, expired: () => false }))!;
    const second = (await store.channels.claimSync(id, { now: now + 120_000, expired: (lease) => Sync.leaseExpired(lease, { now: now + 120_000, staleMs: 60_000 }) }))!;
    expect(second.holder).not.toBe(first.holder);
    expect(await store.channels.heartbeat(id, first.holder, now + 121_000)).toBe(false);
    expect(await store.channels.heartbeat(id, second.holder, now + 121_000)).toBe(true);
    await store.channels.finishSync(id, first.holder, { now: now + 122_000 });
    expect((await store.channels.get(id)).status).toBe('syncing');
    await store.channels.finishSync(id, second.holder, { now: now + 123_000 });
    expect((await store.channels.get(id)).status).toBe('live');
  });

  /** The rss connector, with a hook run before each item's load (the nth load, counted from 1, and the entry's id). */
  const hookedRss = (beforeLoad: (n: number, externalId: string) => Promise<void> | void): Sync.SyncDependencies['connectors'] => {
    let loads = 0;
    return {
      rss: {
        kind: 'rss',
        async list(context) {
          const listing = await Connectors.create().rss!.list(context);
          if (listing.unchanged) return listing;
          return { ...listing, entries: listing.entries.map((e) => ({ ...e, load: async () => (await beforeLoad(++loads, e.externalId), e.load()) })) };
        },
      },
    };
  };

  test('behavior: a channel paused during a sync stays paused; the items already written stay', async () => {
    const { id } = await channel(posts);
    const pausing = hookedRss(async (n) => {
      if (n !== 2) return;
      await store.channels.update(id, { status: 'paused' });
      await new Promise((r) => setTimeout(r, 1_200)); // a heartbeat comes and finds the channel paused
    });
    const report = await Sync.syncChannel(deps({ staleMs: 4_000, prefetch: 1, connectors: pausing }), id);
    expect(report).toMatchObject({ outcome: 'skipped', reason: 'paused during the sync' });
    expect((await store.channels.get(id)).status).toBe('paused');
    expect((await store.items.byChannel(id)).length).toBeGreaterThanOrEqual(1);
  });

  test('behavior: a sync stopped by the operator (Ctrl-C) finishes the item in progress, releases the channel and removes nothing', async () => {
    const { id, feed } = await channel(posts);
    await Sync.syncChannel(deps(), id);
    host.routes.get(feed)!.body = rss([{ ...posts[0]!, html: paragraph('Cold proofing, again') }, posts[2]!]);
    const controller = new AbortController();
    const stopping = hookedRss((n) => {
      if (n === 1) controller.abort();
    });
    const report = await Sync.syncChannel(deps({ prefetch: 1, connectors: stopping }), id, { signal: controller.signal });
    expect(report).toMatchObject({ outcome: 'failed', reason: 'stopped after 1 of 2 items', updated: 1, removed: 0 });
    expect(await store.channels.get(id)).toMatchObject({ status: 'live', lastError: 'stopped after 1 of 2 items' });
    expect(await Sync.syncChannel(deps(), id)).toMatchObject({ outcome: 'synced', unchanged: 2, removed: 1 });
  });

  test('behavior: a sync killed half-way leaves whole items, and the next one resumes where it stopped', async () => {
    const { id } = await channel(posts);
    const dying = deps({
      // Named by entry, not by load order: items prefetched together may start loading in any order.
      connectors: hookedRss((_n, externalId) => {
        if (externalId === 'p2') throw new Error('killed');
      }),
    });
    const first = await Sync.syncChannel(dying, id);
    expect(first).toMatchObject({ created: 2, failed: 1 });
    expect((await store.channels.get(id)).lastError).toMatch(/1 of 3 items failed; first: p2: killed/);
    // The failed listing's validators were not kept: the next sync lists again and fetches only what is missing.
    const second = await Sync.syncChannel(deps(), id);
    expect(second).toMatchObject({ outcome: 'synced', created: 1, unchanged: 2 });
    expect((await store.channels.get(id)).lastError).toBeNull();
  });

  test('behavior: the schedule syncs channels that are due, and a failing one waits its interval too', async () => {
    const { id } = await channel(posts);
    const intervals = { youtube: 60, podcast_rss: 60, rss: 30, notion: 30, subtext: 30 };
    const now = Date.now();
    expect(await Scheduler.due(store, { now, intervalMinutes: intervals, kinds: ['rss'] })).toContain(id);
    const reports: Sync.SyncReport[] = [];
    const scheduler = Scheduler.start(deps(), { intervalMinutes: intervals, tickMs: 60_000, onReport: (r) => reports.push(r) });
    await expect.poll(() => reports.some((r) => r.channelId === id)).toBe(true);
    await scheduler.stop();
    expect(reports.find((r) => r.channelId === id)).toMatchObject({ outcome: 'synced', created: 3 });
    expect(await Scheduler.due(store, { now: Date.now(), intervalMinutes: intervals, kinds: ['rss'] })).not.toContain(id);
    expect(await Scheduler.due(store, { now: Date.now() + 31 * 60_000, intervalMinutes: intervals, kinds: ['rss'] })).toContain(id);
  });

  test('behavior: schedulers on three instances of one database sync a due channel once between them', async () => {
    const { id, feed } = await channel(posts);
    const intervals = { youtube: 60, podcast_rss: 60, rss: 30, notion: 30, subtext: 30 };
    // Two more processes on the same database: connections of their own on PostgreSQL. Two SQLite connections in one
    // process cannot wait on each other (a busy wait blocks the thread that would commit), so there the three share
    // one; test/several-instances.test.ts runs processes of their own on both engines.
    const others =
      Engines.current === 'postgres'
        ? await Promise.all([1, 2].map(async () => (await Stores.open({ url: fixture.env.DATABASE_URL! })).store))
        : [];
    const stores = Engines.current === 'postgres' ? [store, ...others] : [store, store, store];
    try {
      const reports: Sync.SyncReport[] = [];
      const schedulers = stores.map((s) => Scheduler.start(deps({ store: s }), { intervalMinutes: intervals, tickMs: 60_000, onReport: (r) => r.channelId === id && reports.push(r) }));
      await expect.poll(() => reports.length, { timeout: 10_000 }).toBe(3);
      await Promise.all(schedulers.map((s) => s.stop()));
      expect(reports.filter((r) => r.outcome === 'synced')).toEqual([expect.objectContaining({ created: 3 })]);
      for (const r of reports.filter((r) => r.outcome !== 'synced')) expect(r.reason).toMatch(/^(another sync is running|synced elsewhere since it was due)$/);
      expect(host.requests.filter((r) => r.path === feed)).toHaveLength(1);
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });
});

describe('sync with a subtext source', () => {
  const exported = (rows: string[]) => ({ body: `id,sent_at,text,url\n${rows.join('\n')}\n`, type: 'text/csv; charset=utf-8' });
  const starter = 'm1,2025-01-02,"Feed the starter twice a day, at the same hours.",https://example.com/starter';
  const stone = 'm2,2025-02-03,"Heat the baking stone for a full hour before the first loaf goes in.",';
  const steam = 'm3,2025-03-04,"Steam for the first twenty minutes, then let the crust dry.",';

  test('behavior: an export at a URL syncs one item per message with its date and link; an edit updates it, a deletion inside the export removes it', async () => {
    host.routes.set('/subtext/wren.csv', exported([starter, stone, steam]));
    const channel = await store.channels.create({ profileId, kind: 'subtext', label: 'Texts', accessLevel: 'public', ratePerMillionTokens: 1, sourceUrl: `${host.url}/subtext/wren.csv` });
    expect(await Sync.syncChannel(deps(), channel.id)).toMatchObject({ outcome: 'synced', created: 3, failed: 0 });
    expect((await store.items.byChannel(channel.id)).map((i) => [i.externalId, i.publishedAt, i.sourceUrl])).toEqual([
      ['m3', Date.parse('2025-03-04'), null],
      ['m2', Date.parse('2025-02-03'), null],
      ['m1', Date.parse('2025-01-02'), 'https://example.com/starter'],
    ]);
    expect(await textOf(Items.itemId(channel.id, 'm2'))).toBe('Heat the baking stone for a full hour before the first loaf goes in.');
    expect((await Sync.syncChannel(deps(), channel.id)).outcome).toBe('unchanged');

    host.routes.set('/subtext/wren.csv', exported([starter, steam.replace('twenty', 'fifteen')]));
    expect(await Sync.syncChannel(deps(), channel.id)).toMatchObject({ outcome: 'synced', updated: 1, unchanged: 1, removed: 1 });
    expect((await store.items.byChannel(channel.id)).map((i) => i.externalId)).toEqual(['m3', 'm1']);
    expect(await textOf(Items.itemId(channel.id, 'm3'))).toContain('first fifteen minutes');
  });
});

describe('what a window listing says was deleted', () => {
  const ids = (s: string) => s.split('');
  const byAge = (newestFirst: string) => new Map(ids(newestFirst).map((id, i) => [id, 1_000_000 - i]));
  const deleted = (previous: string, now: string, dates = byAge(previous)) => Sync.deletedFromWindow(ids(previous), new Set(ids(now)), dates).join('');

  test.each([
    ['edcba', 'edba', 'c', 'one entry from the middle'],
    ['edcba', 'eda', 'cb', 'two neighbours from the middle'],
    ['edc', 'dcb', 'e', 'the newest entry (a pulled episode)'],
    ['edcba', 'gfedc', '', 'the oldest scrolled off'],
    ['fedcba', 'hgfa', '', 'a long gap before an old entry that surfaced again'],
  ])('behavior: %s then %s deletes "%s" (%s)', (previous, now, expected) => {
    expect(deleted(previous, now)).toBe(expected);
  });

  test('behavior: a pinned old entry at the top does not turn the order around; oldest-first feeds work too', () => {
    const dates = new Map([['p', 1], ['d', 40], ['c', 30], ['b', 20]]);
    expect(Sync.deletedFromWindow(['p', 'd', 'c', 'b'], new Set(['p', 'e', 'd', 'c']), dates)).toEqual([]);
    const oldestFirst = new Map([['a', 1], ['b', 2], ['c', 3], ['d', 4]]);
    expect(Sync.deletedFromWindow(['a', 'b', 'c', 'd'], new Set(['b', 'c']), oldestFirst)).toEqual(['d']);
  });
});

describe('profile-edge sync (CLI)', () => {
  const cli = Cli.run;
  const env = () => ({ ...cliPlace.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent', FETCH_ALLOW_PRIVATE: 'true', FETCH_TIMEOUT_MS: '2000' });

  test('behavior: an operator points a channel at a feed, syncs it with progress, and sees the result in channels list', async () => {
    host.routes.set('/cli/feed.xml', { body: rss(posts), type: 'application/rss+xml' });
    await Cli.profileWithChannel(env(), { slug: 'cli-writer', kind: 'rss', channelId: 'ch_cli_blog', label: 'Blog' });
    const bad = await cli(env(), 'channels', 'update', 'ch_cli_blog', '--source-url', 'ftp://example.com/feed', '--label', 'Renamed');
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('--source-url must be an http(s) URL') });
    expect((await cli(env(), 'channels', 'update', 'ch_cli_blog', '--source-url', `${host.url}/cli/feed.xml`)).code).toBe(0);

    const run = await cli(env(), 'sync', '--channel', 'ch_cli_blog');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('ch_cli_blog: synced, 3 new, 0 updated, 0 unchanged, 0 removed');
    expect(run.stderr).toContain('sync ch_cli_blog 3/3');
    expect((await cli(env(), 'sync', '--profile', 'cli-writer')).stdout).toContain('ch_cli_blog: unchanged since the last sync');

    const json = await cli(env(), 'sync', '--channel', 'ch_cli_blog', '--json');
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ channelId: 'ch_cli_blog', outcome: 'unchanged' })]);
    const list = await cli(env(), 'channels', 'list', '--profile', 'cli-writer', '--json');
    expect(JSON.parse(list.stdout)[0]).toMatchObject({ label: 'Blog', sourceUrl: `${host.url}/cli/feed.xml`, status: 'live', items: 3, lastError: null });
  });

  test('error: a failing source exits 1 with the reason, shown again in channels list', async () => {
    host.routes.set('/cli/feed.xml', { body: 'gone', status: 404 });
    host.routes.delete('/cli/feed.xml');
    const run = await cli(env(), 'sync');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/ch_cli_blog: failed, .*answered 404/);
    expect((await cli(env(), 'channels', 'list')).stdout).toMatch(/Z .*answered 404/);
    expect((await cli(env(), 'sync', '--channel', 'ch_cli_blog', '--profile', 'cli-writer')).code).toBe(2);
    expect((await cli(env(), 'sync', '--channel', 'ch_nope')).code).not.toBe(0);
  });

  test('behavior: sync --watch keeps running on the schedule until Ctrl-C, then exits cleanly', async () => {
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), 'sync', '--watch', '--channel', 'ch_cli_blog'], {
      env: { ...process.env, ...env(), LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await expect.poll(() => stderr, { timeout: 15_000 }).toContain('watching:');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(child.exitCode).toBeNull(); // still watching
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 20_000);

  test('behavior: a sync killed with kill -9 holds its channel no longer than it lives: the next sync takes over at once', async () => {
    host.routes.set('/cli/slow-feed.xml', { body: rss(posts), type: 'application/rss+xml', delayMs: 60_000 });
    await Cli.profileWithChannel(env(), { slug: 'cli-slow', kind: 'rss', channelId: 'ch_cli_slow' });
    expect((await cli(env(), 'channels', 'update', 'ch_cli_slow', '--source-url', `${host.url}/cli/slow-feed.xml`)).code).toBe(0);
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), 'sync', '--channel', 'ch_cli_slow'], {
      env: { ...process.env, ...env(), FETCH_TIMEOUT_MS: '120000' },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const status = async () => JSON.parse((await cli(env(), 'channels', 'list', '--profile', 'cli-slow', '--json')).stdout)[0].status as string;
    await expect.poll(status, { timeout: 15_000 }).toBe('syncing');
    // While its holder lives, the channel is its own.
    expect((await cli(env(), 'sync', '--channel', 'ch_cli_slow')).stdout).toContain('another sync is running');
    child.kill('SIGKILL');
    await exited;
    host.routes.set('/cli/slow-feed.xml', { body: rss(posts), type: 'application/rss+xml' });
    const next = await cli(env(), 'sync', '--channel', 'ch_cli_slow');
    expect(next.stdout).toContain('ch_cli_slow: synced, 3 new');
    expect(await status()).toBe('live');
  }, 40_000);

  test('error: with private addresses refused (the default), a loopback feed fails and says why', async () => {
    const run = await cli({ ...env(), FETCH_ALLOW_PRIVATE: 'false' }, 'sync', '--channel', 'ch_cli_blog');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('127.0.0.1 is a private address');
  });
});
