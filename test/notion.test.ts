import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Connectors from '../src/sources/Connectors.js';
import * as Notion from '../src/sources/Notion.js';
import * as NotionBlocks from '../src/sources/NotionBlocks.js';
import type { NotionBlock } from '../src/sources/NotionBlocks.js';
import * as Sync from '../src/sources/Sync.js';
import * as Config from '../src/config/Config.js';
import * as Services from '../src/Services.js';
import * as Items from '../src/store/Items.js';
import * as Keys from '../src/auth/Keys.js';
import * as Tools from '../tools/Tools.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as NotionServer from './support/NotionServer.js';
import * as Shared from './support/Shared.js';
import * as Sources from './support/Sources.js';

const token = 'ntn_test_integration_secret';
let notion: Awaited<ReturnType<typeof NotionServer.start>>;
let store: Awaited<ReturnType<typeof Sources.store>>;

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
  store = await Sources.store('notion');
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
  await store.close();
  await notion.close();
});

/** The pauses the connector asked for before retries, in order: its sleep notes each and goes on at once. */
const waits: number[] = [];
const sleep = async (ms: number) => void waits.push(ms);
const deps = (tokens: Record<string, string> = { NOTION_TOKEN: token }) => store.deps({ connectors: Connectors.create({ notion: { baseUrl: notion.url, tokens, sleep } }) });
const textOf = async (channelId: string, externalId: string) =>
  (await store.store.items.withChunks(Items.itemId(channelId, externalId)))?.chunks.map((c) => c.text).join('\n') ?? '';

describe('notion connector (the real @notionhq/client against a stand-in API)', () => {
  test('behavior: pages, sub-pages and database rows become items, with structure kept and every block page read', async () => {
    await store.store.channels.create({ id: 'ch_handbook', profileId: store.profileId, kind: 'notion', label: 'Handbook', accessLevel: 'private', ratePerMillionTokens: 5, sourceUrl: `https://www.notion.so/acme/Members-handbook-${root.replace(/-/g, '')}` });
    notion.rateLimitNext = 1;
    waits.length = 0;
    expect(await Sync.syncChannel(deps(), 'ch_handbook')).toMatchObject({ outcome: 'synced', created: 4, failed: 0 });
    expect(waits).toEqual([1_000]); // the 429's Retry-After (1 s) was waited out, once
    const items = await store.store.items.byChannel('ch_handbook');
    expect(items.map((i) => i.title).sort()).toEqual(['Annual checkup', 'Emergency fund', 'Members handbook', 'Tax-loss harvesting']);
    expect(items.find((i) => i.externalId === child)!.sourceUrl).toBe(`https://www.notion.so/Tax-loss-harvesting-${child.replace(/-/g, '')}`);
    const handbook = await textOf('ch_handbook', root);
    for (const expected of ['Rebalancing', 'Rebalance when an asset drifts past its band.', 'Why bands?', '  Bands trade fewer times than calendars do.', '[x] Check allocation yearly', 'python: drift = weight - target', 'Band | Width', 'Absolute | 5 points', '1. Step 1 of the annual review.', '120. Step 120 of the annual review.']) {
      expect(handbook).toContain(expected);
    }
    expect(handbook).not.toContain('Harvest losses');
    expect(await textOf('ch_handbook', rows[0]!)).toContain('Status: Done\n\nTags: yearly, review');
    expect(notion.requests.filter((r) => r.path === `/v1/pages/${root}`)).toHaveLength(2); // the 429, then the page
    expect(notion.requests.filter((r) => r.path === `/v1/blocks/${root}/children`)).toHaveLength(2); // two pages of 100
    expect(notion.requests.every((r) => r.version !== undefined)).toBe(true);
  });

  test('behavior: an edited block updates its page only; a deleted page is removed from the index', async () => {
    notion.workspace.children.set(child, [block('c-p', 'paragraph', { rich_text: text('Harvest losses before December; mind the 30-day wash-sale rule.') })]);
    notion.workspace.rows.set(dataSource, [notion.workspace.rows.get(dataSource)![0]!]);
    expect(await Sync.syncChannel(deps(), 'ch_handbook')).toMatchObject({ outcome: 'synced', updated: 1, unchanged: 2, removed: 1 });
    expect(await textOf('ch_handbook', child)).toContain('wash-sale');
    expect((await store.store.items.byChannel('ch_handbook')).some((i) => i.externalId === rows[1])).toBe(false);
  });

  test('behavior: a database that cannot be read (a linked view) is skipped, and the partial walk removes nothing', async () => {
    const linked = '66666666-6666-4666-8666-666666666666';
    const children = notion.workspace.children.get(root)!;
    // The sub-page is gone from the workspace, and a linked database view the API cannot read appears.
    notion.workspace.children.set(root, [...children.filter((b) => b.id !== child), block(linked, 'child_database', { title: 'Linked view' })]);
    try {
      const report = await Sync.syncChannel(deps(), 'ch_handbook');
      expect(report).toMatchObject({ outcome: 'synced', removed: 0, failed: 0 });
      expect((await store.store.channels.get('ch_handbook')).lastError).toMatch(/partial listing, nothing removed: not read: database 66666666-6666-4666-8666-666666666666 \(object_not_found\)/);
      expect((await store.store.items.byChannel('ch_handbook')).some((i) => i.externalId === child)).toBe(true);
    } finally {
      notion.workspace.children.set(root, children);
    }
  });

  test('behavior: a channel names its token variable; a missing or wrong token fails clearly without leaking it', async () => {
    await store.store.channels.create({ id: 'ch_other', profileId: store.profileId, kind: 'notion', label: 'Other', accessLevel: 'private', ratePerMillionTokens: 5, sourceUrl: `https://www.notion.so/${child.replace(/-/g, '')}`, settings: { tokenVariable: 'NOTION_TOKEN_OWEN' } });
    const missing = await Sync.syncChannel(deps(), 'ch_other');
    expect(missing).toMatchObject({ outcome: 'failed', reason: 'no Notion integration token: set NOTION_TOKEN_OWEN in the environment' });
    const wrong = await Sync.syncChannel(deps({ NOTION_TOKEN_OWEN: 'ntn_wrong_secret' }), 'ch_other');
    expect(wrong.reason).toMatch(/^Notion answered 401 unauthorized/);
    expect(JSON.stringify(wrong) + store.logLines.join('\n')).not.toContain('ntn_wrong_secret');
    expect(await Sync.syncChannel(deps({ NOTION_TOKEN_OWEN: token }), 'ch_other')).toMatchObject({ outcome: 'synced', created: 1 });
  });

  test('behavior: a database URL works as a root too; ids are read from URLs', async () => {
    await store.store.channels.create({ id: 'ch_db', profileId: store.profileId, kind: 'notion', label: 'Checklists', accessLevel: 'private', ratePerMillionTokens: 5, sourceUrl: `https://www.notion.so/acme/${database.replace(/-/g, '')}?v=abc` });
    expect(await Sync.syncChannel(deps(), 'ch_db')).toMatchObject({ outcome: 'synced', created: 1 });
    expect(Notion.idOf('https://www.notion.so/Page-0123456789abcdef0123456789abcdef')).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(Notion.idOf('https://www.notion.so/no-id-here')).toBeUndefined();
  });

  test('behavior: a Retry-After over 30 s is waited out for 30 s, then the call is tried again', async () => {
    notion.rateLimitNext = 120;
    waits.length = 0;
    expect(await Sync.syncChannel(deps(), 'ch_db')).toMatchObject({ outcome: 'synced', unchanged: 1, failed: 0 });
    expect(waits).toEqual([30_000]);
  });

  test('behavior: token variables come from configuration: NOTION_TOKEN and NOTION_TOKEN_<NAME> only', () => {
    const config = Config.load({ NOTION_TOKEN: 'a', NOTION_TOKEN_OWEN: 'b', NOTION_TOKENS: 'c', OTHER: 'd' });
    expect(config.notion.tokens).toEqual({ NOTION_TOKEN: 'a', NOTION_TOKEN_OWEN: 'b' });
  });
});

describe('notion property values (a workspace configured through the environment)', () => {
  const tracker = '77777777-7777-4777-8777-777777777777';
  const trackerSource = '88888888-8888-4888-8888-888888888888';
  const ticket = '99999999-9999-4999-8999-999999999999';
  const signed = (expiry: string) => ({ url: `https://prod-files-secure.s3.us-west-2.amazonaws.com/ws/audit-checklist.pdf?X-Amz-Expires=3600&X-Amz-Date=${expiry}`, expiry_time: expiry });
  // Each property exactly as the API returns it on a page (see PageObjectResponse in @notionhq/client).
  const properties = (attachmentExpiry: string) => ({
    Ticket: { id: '%7BGE%7C', type: 'unique_id', unique_id: { prefix: 'ENG', number: 42 } },
    Stage: { id: 'fStg', type: 'formula', formula: { type: 'string', string: 'Blocked on the vendor audit' } },
    Effort: { id: 'fEff', type: 'formula', formula: { type: 'number', number: 0.1 + 0.2 } },
    Shipped: { id: 'fShp', type: 'formula', formula: { type: 'boolean', boolean: false } },
    Due: { id: 'fDue', type: 'formula', formula: { type: 'date', date: { start: '2025-09-08T03:52:00.000+00:00', end: null, time_zone: null } } },
    Unset: { id: 'fNil', type: 'formula', formula: { type: 'string', string: null } },
    'Estimate total': { id: 'rSum', type: 'rollup', rollup: { type: 'number', number: 13, function: 'sum' } },
    'Latest check-in': { id: 'rDat', type: 'rollup', rollup: { type: 'date', date: { start: '2025-10-01', end: '2025-10-03', time_zone: null }, function: 'date_range' } },
    Owners: {
      id: 'rArr',
      type: 'rollup',
      rollup: {
        type: 'array',
        array: [
          { type: 'title', title: text('Platform guild') },
          { type: 'rich_text', rich_text: text('Vendor liaison') },
          { type: 'multi_select', multi_select: [{ id: 'e81a52e0-b168-451e-b23b-1c35e57037b2', name: 'security', color: 'red' }] },
          { type: 'relation', relation: [{ id: root }] },
        ],
        function: 'show_original',
      },
    },
    Reviewers: { id: 'rNon', type: 'rollup', rollup: { type: 'array', array: [], function: 'show_original' } },
    Attachments: {
      id: 'qEdK',
      type: 'files',
      files: [
        { name: 'audit-checklist.pdf', type: 'file', file: signed(attachmentExpiry) },
        { name: 'Vendor contract', type: 'external', external: { url: 'https://example.com/contracts/vendor' } },
      ],
    },
  });

  test('behavior: formulas, rollups, unique ids and files are indexed as Notion shows them, and a query finds them', async () => {
    const place = await Engines.fresh(Engines.current, 'notion-properties');
    const w = notion.workspace;
    w.databases.set(tracker, { object: 'database', id: tracker, title: text('Tracker'), data_sources: [{ id: trackerSource, name: 'Tracker' }] });
    w.rows.set(trackerSource, [page(ticket, 'Vendor onboarding', properties('2025-01-11T10:00:00.000Z'))]);
    w.children.set(ticket, []);
    const env = { ...place.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent', NOTION_BASE_URL: `${notion.url}/`, NOTION_TOKEN: token };
    try {
      await Cli.profileWithChannel(env, { slug: 'tracker', kind: 'notion', channelId: 'ch_tracker' });
      expect((await Cli.run(env, 'channels', 'update', 'ch_tracker', '--source-url', `https://www.notion.so/acme/${tracker.replace(/-/g, '')}?v=1`)).code).toBe(0);
      const synced = await Cli.run(env, 'sync', '--channel', 'ch_tracker', '--json');
      expect(JSON.parse(synced.stdout)).toMatchObject([{ outcome: 'synced', created: 1, failed: 0 }]);

      const services = await Services.create(Config.load(env));
      try {
        const items = await Promise.all((await services.store.items.byChannel('ch_tracker')).map((i) => services.store.items.withChunks(i.id)));
        const lines = items.flatMap((i) => i!.chunks.map((c) => c.text)).join('\n').split(/\n+/);
        expect(lines).toEqual(
          expect.arrayContaining([
            'Ticket: ENG-42',
            'Stage: Blocked on the vendor audit',
            'Effort: 0.3',
            'Shipped: no',
            'Due: 2025-09-08T03:52:00.000+00:00',
            'Estimate total: 13',
            'Latest check-in: 2025-10-01 to 2025-10-03',
            'Owners: Platform guild, Vendor liaison, security',
            'Attachments: audit-checklist.pdf, Vendor contract',
          ]),
        );
        // Empty values make no line; a hosted file's signed URL is never indexed.
        expect(lines.join('\n')).not.toMatch(/Unset|Reviewers|X-Amz|prod-files-secure/);

        const account = await services.store.accounts.create({ name: 'reader' });
        await services.store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 100 });
        const key = (await Keys.issue(services.store, { kind: 'api_key', accountId: account.id })).token;
        const ask = async (question: string) =>
          (
            (await Tools.invoke({
              services,
              name: 'profile_query',
              args: { question, mode: 'raw', paymentMode: 'credits' },
              presented: { apiKey: key, origin: 'test' },
              binding: { kind: 'profile', slug: 'tracker' },
            })) as { chunks: { text: string; sourceUrl?: string }[] }
          ).chunks;
        const found = await ask('Which ticket is blocked on the vendor audit?');
        expect(found[0]).toMatchObject({ sourceUrl: expect.stringContaining(ticket.replace(/-/g, '')), text: expect.stringContaining('Ticket: ENG-42') });
        expect((await ask('Who are the owners from the platform guild?'))[0]!.text).toContain('Owners: Platform guild, Vendor liaison, security');
      } finally {
        await services.close();
      }

      // Notion signs a hosted file's URL afresh on every read: that alone is no edit.
      w.rows.set(trackerSource, [page(ticket, 'Vendor onboarding', properties('2025-01-11T11:00:00.000Z'))]);
      expect(JSON.parse((await Cli.run(env, 'sync', '--channel', 'ch_tracker', '--json')).stdout)).toMatchObject([{ outcome: 'synced', unchanged: 1, updated: 0 }]);
    } finally {
      await place.drop();
    }
  });
});

describe('channel settings (CLI)', () => {
  test('error: settings are checked; tokenVariable may name only NOTION_TOKEN variables', async () => {
    const place = await Engines.fresh(Engines.current, 'notion-cli');
    try {
      const env = { ...place.env, DEMO_DATA: 'false', LOG_LEVEL: 'silent' };
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
      await place.drop();
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

  test('behavior: formula, rollup, unique id and files properties of real rows read as Notion shows them', () => {
    const [first, second] = read('notion-ruby-mapping_query_data_source_limit_2.json').results.map((row: Record<string, unknown>) => NotionBlocks.propertyLines(row));
    expect(first).toEqual(expect.arrayContaining(['ID: ST-4', 'FormulaTitle: 2025-09-08T03:52:00.000+00:00']));
    expect(first!.some((line: string) => line.startsWith('RollupTitle:') || line.startsWith('File&MediaTitle:'))).toBe(false);
    expect(second).toEqual(expect.arrayContaining(['ID: ST-5', 'RollupTitle: Tag 1', 'File&MediaTitle: https://img.icons8.com/ios-filled/250/000000/mac-os.png']));
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
