import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Subtext from '../src/sources/Subtext.js';
import * as Sync from '../src/sources/Sync.js';
import * as Cli from './support/Cli.js';
import * as FeedHost from './support/FeedHost.js';
import * as Sources from './support/Sources.js';

let host: Awaited<ReturnType<typeof FeedHost.start>>;
let store: Awaited<ReturnType<typeof Sources.store>>;
let directory: string;

beforeAll(async () => {
  host = await FeedHost.start();
  store = await Sources.store('subtext');
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-subtext-'));
});
afterAll(async () => {
  store.close();
  await host.close();
  fs.rmSync(directory, { recursive: true, force: true });
});

const messages = [
  { id: 'm1', text: 'No caffeine after noon, starting this week.', sent_at: '2023-03-13T09:00:00Z' },
  { id: 'm2', text: 'Naps: twenty minutes or less, before 3 pm.', sent_at: '2024-09-23T09:00:00Z', url: 'https://example.com/naps' },
  { id: 'm3', text: 'Light box at 10,000 lux for twenty minutes after waking, in the dark months of the year when the sun is late.', sent_at: '2024-10-21T09:00:00Z' },
];

describe('Subtext exports', () => {
  test('behavior: JSON arrays, {"messages": [...]} and CSV are read, with ISO or epoch dates', () => {
    expect(Subtext.parseExport(JSON.stringify(messages), 'json').map((m) => [m.id, m.sentAt])).toEqual([
      ['m1', Date.parse('2023-03-13T09:00:00Z')],
      ['m2', Date.parse('2024-09-23T09:00:00Z')],
      ['m3', Date.parse('2024-10-21T09:00:00Z')],
    ]);
    const wrapped = Subtext.parseExport(JSON.stringify({ messages: [{ body: 'Hi', created_at: 1_700_000_000 }, { message: 'Yo', timestamp: 1_700_000_000_000 }] }), 'json');
    expect(wrapped.map((m) => [m.text, m.sentAt])).toEqual([
      ['Hi', 1_700_000_000_000],
      ['Yo', 1_700_000_000_000],
    ]);
    expect(wrapped[0]!.id).toMatch(/^sha256:/);
    const csv = Subtext.parseExport('id,sent_at,text,url\n7,2025-01-02,"Rebalance once a year, not weekly.",https://example.com/r\n', 'csv');
    expect(csv).toEqual([{ id: '7', text: 'Rebalance once a year, not weekly.', sentAt: Date.parse('2025-01-02'), url: 'https://example.com/r', title: undefined, author: undefined }]);
  });

  test('error: an export that is not one says what was expected and where', () => {
    expect(() => Subtext.parseExport('{"items": []}', 'json')).toThrow(/expected an array of messages/);
    expect(() => Subtext.parseExport('[{"id": 1}]', 'json')).toThrow(/message 1 has no text/);
    expect(() => Subtext.parseExport('nope', 'json')).toThrow(/not JSON/);
    expect(() => Subtext.parseExport('id,text\n1,"unterminated', 'csv')).toThrow(/not CSV/);
    expect(() => Subtext.parseExport('[{"text": "a", "date": 1e300}]', 'json')).toThrow(/message 1 has a date that is not one/);
    expect(() => Subtext.parseExport('[{"text": "a", "date": "someday"}]', 'json')).toThrow(/message 1 has a date that is not one/);
    expect(() => Subtext.parseExport('[{"id": 1, "text": "a"}, {"id": "1", "text": "b"}]', 'json')).toThrow(/message 2 repeats the id "1"/);
    expect(() => Subtext.parseExport('[{"id": {"x": 1}, "text": "a"}]', 'json')).toThrow(/id that is not a string or a number/);
  });

  test('behavior: a JSON URL syncs one item per message, titled by its first words; edits update, deletions within the export remove', async () => {
    host.routes.set('/subtext/nadia.json', { body: JSON.stringify(messages), type: 'application/json' });
    await store.store.channels.create({ id: 'ch_texts', profileId: store.profileId, kind: 'subtext', label: 'Texts', accessLevel: 'public', ratePerMillionTokens: 1, sourceUrl: `${host.url}/subtext/nadia.json` });
    expect(await Sync.syncChannel(store.deps(), 'ch_texts')).toMatchObject({ outcome: 'synced', created: 3 });
    const items = await store.store.items.byChannel('ch_texts');
    expect(items.map((i) => i.title)).toEqual(['Light box at 10,000 lux for twenty minutes after waking, in the dark months…', 'Naps: twenty minutes or less, before 3 pm.', 'No caffeine after noon, starting this week.']);
    expect(items[1]).toMatchObject({ sourceUrl: 'https://example.com/naps', publishedAt: Date.parse('2024-09-23T09:00:00Z') });
    expect((await Sync.syncChannel(store.deps(), 'ch_texts')).outcome).toBe('unchanged');

    // The creator deleted m2 and edited m3.
    host.routes.set('/subtext/nadia.json', { body: JSON.stringify([messages[0], { ...messages[2]!, text: 'Light box: 10,000 lux, twenty to thirty minutes.' }]), type: 'application/json' });
    expect(await Sync.syncChannel(store.deps(), 'ch_texts')).toMatchObject({ updated: 1, unchanged: 1, removed: 1 });
    expect((await store.store.items.byChannel('ch_texts')).map((i) => i.externalId).sort()).toEqual(['m1', 'm3']);
    // A later export of autumn 2024 only: m1 is older than all of it, so it is kept.
    host.routes.set('/subtext/nadia.json', { body: JSON.stringify([messages[2]]), type: 'application/json' });
    expect(await Sync.syncChannel(store.deps(), 'ch_texts')).toMatchObject({ updated: 1, removed: 0 });
    expect((await store.store.items.byChannel('ch_texts')).map((i) => i.externalId).sort()).toEqual(['m1', 'm3']);
  });

  test('behavior: importing an older, partial export (a backfill) removes none of the newer messages', async () => {
    await store.store.channels.create({ id: 'ch_backfill', profileId: store.profileId, kind: 'subtext', label: 'Texts', accessLevel: 'public', ratePerMillionTokens: 1 });
    const months = ['01', '02', '03', '04', '05', '06'].map((m) => ({ id: `b${m}`, text: `Message of month ${m}.`, sent_at: `2025-${m}-10T09:00:00Z` }));
    const imported = (list: object[]) => Sync.syncChannel(store.deps(), 'ch_backfill', { listing: Subtext.listing(Subtext.parseExport(JSON.stringify(list), 'json'), {}) });
    expect(await imported(months)).toMatchObject({ created: 6 });
    // A later full export without March: deleted, since it vanished from between messages that are still there.
    expect(await imported(months.filter((m) => m.id !== 'b03'))).toMatchObject({ unchanged: 5, removed: 1 });
    expect(await imported(months.slice(0, 2))).toMatchObject({ unchanged: 2, removed: 0 });
    expect(await store.store.items.byChannel('ch_backfill')).toHaveLength(5);
    // An import is not a sync of the source: it leaves the channel's sync record alone.
    expect(await store.store.channels.get('ch_backfill')).toMatchObject({ lastSyncedAt: null, lastError: null, status: 'live' });
  });

  test('behavior: profile-edge import reads an export file into a subtext channel', async () => {

    const env = { DATABASE_PATH: path.join(directory, 'cli.db'), DEMO_DATA: 'false', LOG_LEVEL: 'silent' };
    await Cli.profileWithChannel(env, { slug: 'texter', kind: 'subtext', channelId: 'ch_cli_texts' });
    const file = path.join(directory, 'export.csv');
    fs.writeFileSync(file, 'id,date,message\n1,2025-02-01,First text\n2,2025-02-08,Second text\n');
    const run = await Cli.run(env, 'import', '--channel', 'ch_cli_texts', file);
    expect(run).toMatchObject({ code: 0, stdout: expect.stringContaining('ch_cli_texts: synced, 2 new') });
    expect((await Cli.run(env, 'import', '--channel', 'ch_cli_texts', file)).stdout).toContain('0 new, 0 updated, 2 unchanged');

    const bad = path.join(directory, 'bad.json');
    fs.writeFileSync(bad, '{"nothing": true}');
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_texts', bad)).toMatchObject({ code: 1, stderr: expect.stringContaining('cannot import "bad.json": expected an array of messages') });
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_texts', path.join(directory, 'missing.json'))).toMatchObject({ code: 1, stderr: expect.stringContaining('no such file') });
    expect((await Cli.run(env, 'import', '--channel', 'ch_cli_texts', path.join(directory, 'missing.json'))).stderr).not.toMatch(/\n\s+at /);
    const empty = path.join(directory, 'empty.csv');
    fs.writeFileSync(empty, 'id,date,message\n');
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_texts', empty)).toMatchObject({ code: 1, stderr: expect.stringContaining('cannot import "empty.csv": no messages in it') });
    expect((await Cli.run(env, 'channels', 'update', 'ch_cli_texts', '--status', 'paused')).code).toBe(0);
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_texts', file)).toMatchObject({ code: 1, stdout: expect.stringContaining('skipped, paused') });
    expect((await Cli.run(env, 'channels', 'create', '--profile', 'texter', '--kind', 'rss', '--label', 'Blog', '--id', 'ch_cli_rss')).code).toBe(0);
    expect(await Cli.run(env, 'import', '--channel', 'ch_cli_rss', file)).toMatchObject({ code: 2, stderr: expect.stringContaining('use upload for files') });
  });
});
