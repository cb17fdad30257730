import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as TermModel from '../src/retrieval/terms/TermModel.js';
import * as Text from '../src/retrieval/Text.js';
import * as Environment from './support/Environment.js';
import * as Transports from './support/Transports.js';
import type { Outcome, Transport, TransportName } from './support/Transports.js';

/**
 * Ranking statistics (document frequencies, chunk counts, lengths, the term model) are counted over what the caller
 * may read. Two stores hold the same demo; the second also holds private and paused content full of the question's
 * words and of words found nowhere else. A caller who may read none of it must get the same answer, byte for byte.
 */

const words = ['coil', 'folds', 'bulk', 'fermentation', 'dough', 'hydration', 'mara'];
/** Words that occur only in the private content: to the caller they must look like words that occur nowhere. */
const hidden = ['zorblaxine', 'quendrath', 'vimmerlock'];

async function addPrivateContent({ store }: Environment.Environment['services']): Promise<void> {
  const text = (n: number) => `${Array.from({ length: 40 }, (_, i) => words[(i + n) % words.length]).join(' ')} ${hidden.join(' ')}.`;
  const lab = await store.profiles.create({ slug: 'hidden-lab', name: 'Hidden Lab', visibility: 'private' });
  const labNotes = await store.channels.create({ profileId: lab.id, kind: 'user_upload', label: 'Lab notes', accessLevel: 'public', ratePerMillionTokens: 1 });
  const mara = await store.profiles.get('mara-lindqvist');
  const maraPrivate = await store.channels.create({ profileId: mara.id, kind: 'user_upload', label: 'Members only', accessLevel: 'private', ratePerMillionTokens: 1 });
  const maraPaused = await store.channels.create({ profileId: mara.id, kind: 'user_upload', label: 'Drafts', accessLevel: 'public', ratePerMillionTokens: 1 });
  for (const channelId of [labNotes.id, maraPrivate.id, maraPaused.id]) {
    for (let n = 0; n < 30; n++) await store.items.put(SearchTerms.indexed({ channelId, externalId: `note-${n}`, title: `Bulk fermentation coil folds ${n}`, contentHash: `h${n}`, chunks: [{ text: text(n) }] }));
  }
  await store.channels.update(maraPaused.id, { status: 'paused' });
}

const questions = [
  'How many coil folds does Mara do during bulk fermentation?',
  `How many coil folds does Mara do during bulk fermentation ${hidden[0]}?`,
  `What does ${hidden[1]} say about dough hydration?`,
];

const names: TransportName[] = ['handler', 'rest', 'mcp-http', 'mcp-stdio'];
type World = { environment: Environment.Environment; http: Awaited<ReturnType<typeof Environment.serve>>; transports: Map<TransportName, Transport> };

async function world(withPrivate: boolean): Promise<World> {
  const environment = await Environment.create({ QUOTE_RATE_LIMIT_PER_MINUTE: '100000' });
  if (withPrivate) await addPrivateContent(environment.services);
  await TermModel.build(environment.services.store);
  const http = await Environment.serve(environment);
  const transports = new Map<TransportName, Transport>();
  for (const t of [Transports.handler(environment), Transports.rest(http.url), Transports.mcpHttp(http.url), Transports.mcpStdio(environment, { QUOTE_RATE_LIMIT_PER_MINUTE: '100000' })]) transports.set(t.name, t);
  return { environment, http, transports };
}

let plain: World;
let withPrivate: World;

beforeAll(async () => {
  [plain, withPrivate] = await Promise.all([world(false), world(true)]);
}, 120_000);

afterAll(async () => {
  for (const w of [plain, withPrivate]) {
    if (!w) continue;
    await Promise.all([...w.transports.values()].map((t) => t.close()));
    await w.http.close();
    await w.environment.close();
  }
});

/** The answer as sent, less the one field that names this request rather than the answer. */
const answer = (outcome: Outcome): string => {
  expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: true });
  const { queryId: _id, ...rest } = (outcome as Extract<Outcome, { ok: true }>).payload;
  return JSON.stringify(rest);
};

const ask = (w: World, transport: TransportName, question: string, as: (k: Environment.Keys) => string, scope?: Record<string, unknown>) =>
  w.transports.get(transport)!.call({ tool: 'profile_query', args: { question, mode: 'raw', paymentMode: 'credits', ...(scope && { scope }) }, binding: { kind: 'global' }, credentials: { apiKey: as(w.environment.keys) } });

describe.each(names)('statistics over %s', (transport) => {
  test.each(questions)('behavior: a caller who may not read private content gets the same raw response with or without it: %s', async (question) => {
    const before = answer(await ask(plain, transport, question, (k) => k.callerKey));
    const after = answer(await ask(withPrivate, transport, question, (k) => k.callerKey));
    expect(after).toBe(before);
    // The question's words are in the public demo: this compares real answers, not two empty ones.
    if (question === questions[0]) expect(JSON.parse(after).chunks.length).toBeGreaterThan(0);
  });

  test('behavior: a profile scope reads the same: the profile’s private and paused channels count for nobody who cannot read them', async () => {
    const question = questions[1]!;
    const scope = { kind: 'profile', slug: 'mara-lindqvist' };
    expect(answer(await ask(withPrivate, transport, question, (k) => k.callerKey, scope))).toBe(answer(await ask(plain, transport, question, (k) => k.callerKey, scope)));
  });
});

describe('statistics for authorized readers', () => {
  test('behavior: the owner of private content is ranked with it counted: its chunks answer and the scores move', async () => {
    const { store } = withPrivate.environment.services;
    const owner = (await store.profiles.get('mara-lindqvist')).ownerAccountId;
    expect(owner).toBeTruthy();
    const index = await withPrivate.environment.services.lexicalIndex();
    const maraChannels = await store.channels.byProfile((await store.profiles.get('mara-lindqvist')).id);
    const publicOnly = new Set(maraChannels.filter((c) => c.accessLevel === 'public' && c.status !== 'paused').map((c) => c.id));
    const withMembers = new Set(maraChannels.filter((c) => c.status !== 'paused').map((c) => c.id));
    const stem = Text.stem(hidden[0]!);
    const outside = await index.statistics(publicOnly, [stem]);
    const inside = await index.statistics(withMembers, [stem]);
    expect(inside.chunkCount).toBe(outside.chunkCount + 30);
    expect(outside.df(stem)).toBe(0);
    // The members-only channel counts for its readers; the paused channel counts for nobody, its owner included.
    expect(inside.df(stem)).toBe(30);
  });
});
