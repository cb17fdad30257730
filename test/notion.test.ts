import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Connectors from '../src/sources/Connectors.js';
import * as Notion from '../src/sources/Notion.js';
import * as NotionBlocks from '../src/sources/NotionBlocks.js';
import type { NotionBlock } from '../src/sources/NotionBlocks.js';
import * as Sync from '../src/sources/Sync.js';
import * as Channels from '../src/store/Channels.js';
import * as Items from '../src/store/Items.js';
import * as Config from '../src/config/Config.js';
import * as Cli from './support/Cli.js';
import * as NotionServer from './support/NotionServer.js';
import * as Shared from './support/Shared.js';
import * as Sources from './support/Sources.js';

const token = 'ntn_test_integration_secret';
let notion: Awaited<ReturnType<typeof NotionServer.start>>;
let store: ReturnType<typeof Sources.store>;

const root = '11111111-1111-4111-8111-111111111111';
const child = '22222222-2222-4222-8222-222222222222';
const database = '33333333-3333-4333-8333-333333333333';
const dataSource = '44444444-4444-4444-8444-444444444444';
const rows = ['55555555-5555-4555-8555-555555555551', '55555555-5555-4555-8555-555555555552'];

const text = (content: string) => [{ type: 'text', text: { content }, plain_text: content, annotations: {} }];
const block = (id: string, type: string, body: Record<string, unknown> = {}, hasChildren = false) => ({ object: 'block', id, type, has_children: hasChildren, [type]: body });
const page = (id: string, title: string, extra: Record<string, unknown> = {}) => ({
  object: 'page',
  id,
  created_time: '2025-01-10T09:00:00.000Z',
  last_edited_time: '2025-01-11T09:00:00.000Z',
  archived: false,
  in_trash: false,
  url: `https://www.notion.so/${title.replace(/\W+/g, '-')}-${id.replace(/-/g, '')}`,
  properties: { Name: { id: 'title', type: 'title', title: text(title) }, ...extra },
});

beforeAll(async () => {
  notion = await NotionServer.start(token);
  store = Sources.store('notion');
  const w = notion.workspace;
  w.pages.set(root, page(root, 'Members handbook'));
  w.children.set(root, [
    block('b-h1', 'heading_1', { rich_text: text('Rebalancing') }),
    block('b-p', 'paragraph', { rich_text: text('Rebalance when an asset drifts past its band.') }),
    block('b-toggle', 'toggle', { rich_text: text('Why bands?') }, true),
    block('b-todo', 'to_do', { rich_text: text('Check allocation yearly'), checked: true }),
    block('b-code', 'code', { rich_text: text('drift = weight - target'), language: 'python' }),
    block('b-table', 'table', { table_width: 2 }, true),
    block(child, 'child_page', { title: 'Tax-loss harvesting' }),
    block(database, 'child_database', { title: 'Checklists' }),
    // 120 more paragraphs: block children come 100 at a time.
    ...Array.from({ length: 120 }, (_, i) => block(`b-n${i}`, 'numbered_list_item', { rich_text: text(`Step ${i + 1} of the annual review.`) })),
  ]);
  w.children.set('b-toggle', [block('b-inner', 'paragraph', { rich_text: text('Bands trade fewer times than calendars do.') })]);
  w.children.set('b-table', [block('r1', 'table_row', { cells: [text('Band'), text('Width')] }), block('r2', 'table_row', { cells: [text('Absolute'), text('5 points')] })]);
  w.pages.set(child, page(child, 'Tax-loss harvesting'));
  w.children.set(child, [block('c-p', 'paragraph', { rich_text: text('Harvest losses before the year ends; mind the 30-day rule.') })]);
  w.databases.set(database, { object: 'database', id: database, title: text('Checklists'), data_sources: [{ id: dataSource, name: 'Checklists' }] });
  w.rows.set(dataSource, [
    page(rows[0]!, 'Annual checkup', { Status: { type: 'select', select: { name: 'Done' } }, Tags: { type: 'multi_select', multi_select: [{ name: 'yearly' }, { name: 'review' }] } }),
    page(rows[1]!, 'Emergency fund', { Months: { type: 'number', number: 6 } }),
  ]);
  for (const id of rows) w.children.set(id, [block(`${id}-p`, 'paragraph', { rich_text: text('Row body text.') })]);
});
afterAll(async () => {
  store.close();
  await notion.close();
});

const deps = (tokens: Record<string, string> = { NOTION_TOKEN: token }) => store.deps({ connectors: Connectors.create({ notion: { baseUrl: notion.url, tokens } }) });
const textOf = (channelId: string, externalId: string) =>
  (store.db.prepare('SELECT group_concat(c.text, char(10)) FROM chunks c JOIN items i ON i.id = c.item_id WHERE i.channel_id = ? AND i.external_id = ?').pluck().get(channelId, externalId) as string) ?? '';

describe('notion connector (the real @notionhq/client against a stand-in API)', () => {
  test('behavior: pages, sub-pages and database rows become items, with structure kept and every block page read', async () => {
    Channels.create(store.db, { id: 'ch_handbook', profileId: store.profileId, kind: 'notion', label: 'Handbook', accessLevel: 'private', ratePerMillionTokens: 5, sourceUrl: `https://www.notion.so/acme/Members-handbook-${root.replace(/-/g, '')}` });
    notion.rateLimitNext = 1;
    const started = Date.now();
    expect(await Sync.syncChannel(deps(), 'ch_handbook')).toMatchObject({ outcome: 'synced', created: 4, failed: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // the 429's Retry-After was waited out
    const items = Items.byChannel(store.db, 'ch_handbook');
    expect(items.map((i) => i.title).sort()).toEqual(['Annual checkup', 'Emergency fund', 'Members handbook', 'Tax-loss harvesting']);
    expect(items.find((i) => i.externalId === child)!.sourceUrl).toBe(`https://www.notion.so/Tax-loss-harvesting-${child.replace(/-/g, '')}`);
    const handbook = textOf('ch_handbook', root);
    for (const expected of ['Rebalancing', 'Rebalance when an asset drifts past its band.', 'Why bands?', '  Bands trade fewer times than calendars do.', '[x] Check allocation yearly', 'python: drift = weight - target', 'Band | Width', 'Absolute | 5 points', '1. Step 1 of the annual review.', '120. Step 120 of the annual review.']) {
      expect(handbook).toContain(expected);
    }
    expect(handbook).not.toContain('Harvest losses');
    expect(textOf('ch_handbook', rows[0]!)).toContain('Status: Done\n\nTags: yearly, review');
    expect(notion.requests.filter((r) => r.path === `/v1/pages/${root}`)).toHaveLength(2); // the 429, then the page
    expect(notion.requests.filter((r) => r.path === `/v1/blocks/${root}/children`)).toHaveLength(2); // two pages of 100
    expect(notion.requests.every((r) => r.version !== undefined)).toBe(true);
  });

  test('behavior: an edited block updates its page only; a deleted page is removed from the index', async () => {
    notion.workspace.children.set(child, [block('c-p', 'paragraph', { rich_text: text('Harvest losses before December; mind the 30-day wash-sale rule.') })]);
    notion.workspace.rows.set(dataSource, [notion.workspace.rows.get(dataSource)![0]!]);
    expect(await Sync.syncChannel(deps(), 'ch_handbook')).toMatchObject({ outcome: 'synced', updated: 1, unchanged: 2, removed: 1 });
    expect(textOf('ch_handbook', child)).toContain('wash-sale');
    expect(Items.byChannel(store.db, 'ch_handbook').some((i) => i.externalId === rows[1])).toBe(false);
  });

  test('behavior: a database that cannot be read (a linked view) is skipped, and the partial walk removes nothing', async () => {
    const linked = '66666666-6666-4666-8666-666666666666';
    const children = notion.workspace.children.get(root)!;
    // The sub-page is gone from the workspace, and a linked database view the API cannot read appears.
    notion.workspace.children.set(root, [...children.filter((b) => b.id !== child), block(linked, 'child_database', { title: 'Linked view' })]);
    try {
      const report = await Sync.syncChannel(deps(), 'ch_handbook');
      expect(report).toMatchObject({ outcome: 'synced', removed: 0, failed: 0 });
      expect(Channels.get(store.db, 'ch_handbook').lastError).toMatch(/partial listing, nothing removed: not read: database 66666666-6666-4666-8666-666666666666 \(object_not_found\)/);
      expect(Items.byChannel(store.db, 'ch_handbook').some((i) => i.externalId === child)).toBe(true);
    } finally {
      notion.workspace.children.set(root, children);
    }
  });

  test('behavior: a channel names its token variable; a missing or wrong token fails clearly without leaking it', async () => {
    Channels.create(store.db, { id: 'ch_other', profileId: store.profileId, kind: 'notion', label: 'Other', accessLevel: 'private', ratePerMillionTokens: 5, sourceUrl: `https://www.notion.so/${child.replace(/-/g, '')}`, settings: { tokenVariable: 'NOTION_TOKEN_OWEN' } });
    const missing = await Sync.syncChannel(deps(), 'ch_other');
    expect(missing).toMatchObject({ outcome: 'failed', reason: 'no Notion integration token: set NOTION_TOKEN_OWEN in the environment' });
    const wrong = await Sync.syncChannel(deps({ NOTION_TOKEN_OWEN: 'ntn_wrong_secret' }), 'ch_other');
    expect(wrong.reason).toMatch(/^Notion answered 401 unauthorized/);
    expect(JSON.stringify(wrong) + store.logLines.join('\n')).not.toContain('ntn_wrong_secret');
    expect(await Sync.syncChannel(deps({ NOTION_TOKEN_OWEN: token }), 'ch_other')).toMatchObject({ outcome: 'synced', created: 1 });
  });

  test('behavior: a database URL works as a root too; ids are read from URLs', async () => {
    Channels.create(store.db, { id: 'ch_db', profileId: store.profileId, kind: 'notion', label: 'Checklists', accessLevel: 'private', ratePerMillionTokens: 5, sourceUrl: `https://www.notion.so/acme/${database.replace(/-/g, '')}?v=abc` });
    expect(await Sync.syncChannel(deps(), 'ch_db')).toMatchObject({ outcome: 'synced', created: 1 });
    expect(Notion.idOf('https://www.notion.so/Page-0123456789abcdef0123456789abcdef')).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(Notion.idOf('https://www.notion.so/no-id-here')).toBeUndefined();
  });

  test('behavior: token variables come from configuration: NOTION_TOKEN and NOTION_TOKEN_<NAME> only', () => {
    const config = Config.load({ NOTION_TOKEN: 'a', NOTION_TOKEN_OWEN: 'b', NOTION_TOKENS: 'c', OTHER: 'd' });
    expect(config.notion.tokens).toEqual({ NOTION_TOKEN: 'a', NOTION_TOKEN_OWEN: 'b' });
  });
});

describe('channel settings (CLI)', () => {
  test('error: settings are checked; tokenVariable may name only NOTION_TOKEN variables', async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-notion-cli-'));
    try {
      const env = { DATABASE_PATH: path.join(directory, 'cli.db'), DEMO_DATA: 'false', LOG_LEVEL: 'silent' };
      await Cli.profileWithChannel(env, { slug: 'owen', kind: 'notion', channelId: 'ch_owen_notion' });
      expect(await Cli.run(env, 'channels', 'update', 'ch_owen_notion', '--setting', 'tokenVariable=DATABASE_PATH')).toMatchObject({ code: 2, stderr: expect.stringContaining('is not the environment variable with the Notion integration token') });
      expect(await Cli.run(env, 'channels', 'update', 'ch_owen_notion', '--setting', 'secret=1')).toMatchObject({ code: 2, stderr: expect.stringContaining('KEY one of: tokenVariable') });
      expect(await Cli.run(env, 'channels', 'update', 'ch_owen_notion', '--setting', 'language=en')).toMatchObject({ code: 2, stderr: expect.stringContaining('language applies to youtube channels, not notion') });
      const updated = await Cli.run(env, 'channels', 'update', 'ch_owen_notion', '--setting', 'tokenVariable=NOTION_TOKEN_OWEN', '--source-url', `https://www.notion.so/${root.replace(/-/g, '')}`);
      expect(updated).toMatchObject({ code: 0, stdout: expect.stringContaining('source https://www.notion.so/11111111111141118111111111111111, settings {"tokenVariable":"NOTION_TOKEN_OWEN"}') });
      const [listed] = JSON.parse((await Cli.run(env, 'channels', 'list', '--json')).stdout);
      expect(listed).toMatchObject({ settings: { tokenVariable: 'NOTION_TOKEN_OWEN' }, sourceUrl: expect.stringContaining('notion.so') });
      expect((await Cli.run(env, 'channels', 'update', 'ch_owen_notion', '--setting', 'tokenVariable=')).code).toBe(0);
      expect(JSON.parse((await Cli.run(env, 'channels', 'list', '--json')).stdout)[0].settings).toEqual({});
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!Shared.hasFixtures)('real Notion API responses (../shared/fixtures/notion)', () => {
  const read = (name: string) => JSON.parse(fs.readFileSync(Shared.fixture(`notion/${name}`), 'utf8'));

  test('behavior: every block type of a real page becomes text or is skipped, never a crash', () => {
    for (const name of ['notion-ruby-mapping_retrieve_block_children_test_page.json', 'notion-generator_first-100-child-of-page.json']) {
      const blocks = NotionBlocks.toBlocks(read(name).results as NotionBlock[], () => []);
      expect(blocks.length).toBeGreaterThan(5);
      for (const b of blocks) expect(b.text.trim()).not.toBe('');
    }
    const page = NotionBlocks.toBlocks(read('notion-ruby-mapping_retrieve_block_children_test_page.json').results as NotionBlock[], () => []);
    expect(page.some((b) => b.kind === 'heading')).toBe(true);
    expect(page.map((b) => b.text)).not.toContain('Child page');
  });

  test.each(Shared.fixtures('notion', ['.json']).map((f) => [f.split('/').at(-1)!, f]))('behavior: %s reads without a crash', (_name, file) => {
    const response = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (response.object === 'list') {
      for (const result of response.results) {
        if (result.object === 'block') for (const b of NotionBlocks.toBlocks([result], () => [])) expect(b.text.trim()).not.toBe('');
        else expect(NotionBlocks.pageTitle(result) ?? NotionBlocks.propertyLines(result)).toBeDefined();
      }
    } else if (response.object === 'page') {
      expect(NotionBlocks.pageTitle(response)).toBeDefined();
      NotionBlocks.propertyLines(response);
    } else if (response.object === 'database') {
      expect(response.data_sources.length).toBeGreaterThan(0);
    } else {
      expect(response.object).toBe('data_source');
      expect(NotionBlocks.richText(response.title)).not.toBe('');
    }
  });

  test('behavior: table rows and database rows read from real responses', () => {
    const table = NotionBlocks.toBlocks([{ id: 't', type: 'table', has_children: true, table: {} }], () => read('notion-ruby-mapping_retrieve_block_children_table.json').results);
    expect(table.length).toBe(3);
    expect(table[0]!.text).toContain(' | ');
    const query = read('notion-ruby-mapping_query_data_source_limit_2.json');
    expect(query).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    for (const row of query.results) expect(NotionBlocks.pageTitle(row)).toBeDefined();
    expect(NotionBlocks.pageTitle(read('notion-generator_page.json'))).toBeDefined();
  });
});
