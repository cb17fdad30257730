import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Upload from '../src/ingest/Upload.js';
import type { Embedder } from '../src/retrieval/embedders/Embedder.js';
import * as Embedders from '../src/retrieval/embedders/Embedders.js';
import * as OpenAiEmbedder from '../src/retrieval/embedders/OpenAiEmbedder.js';
import * as TransformersEmbedder from '../src/retrieval/embedders/TransformersEmbedder.js';
import * as Fusion from '../src/retrieval/ranking/Fusion.js';
import * as Reranker from '../src/retrieval/ranking/Reranker.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as VectorCodes from '../src/retrieval/vectors/VectorCodes.js';
import * as VectorSearch from '../src/retrieval/vectors/VectorSearch.js';
import type { Logger } from '../src/log/Logger.js';
import * as Keys from '../src/auth/Keys.js';
import * as Services from '../src/Services.js';
import * as Stores from '../src/store/Store.js';
import * as VectorIndex from '../src/store/VectorIndex.js';
import * as Tools from '../tools/Tools.js';
import * as Cli from './support/Cli.js';
import * as EmbeddingServer from './support/EmbeddingServer.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';
import * as SqliteFile from './support/SqliteFile.js';
import * as TinyOnnxModel from './support/TinyOnnxModel.js';

type Place = Awaited<ReturnType<typeof Engines.fresh>>;
/** Cases about what SQLite itself keeps: skipped on a PostgreSQL run. */
const sqliteOnly = test.skipIf(Engines.current !== 'sqlite');

let server: Awaited<ReturnType<typeof EmbeddingServer.start>>;
let directory: string;
/** The kitchen store the CLI and the services run against, on this run's engine. */
let kitchen: Place;
let env: Record<string, string>;

const docs = {
  'cold-storage.txt': 'Keep the refrigerator door closed and the shelves at four degrees so dairy and leftovers stay safe for days.',
  'bread.txt': 'A sourdough loaf wants a hot oven, steam for the first twenty minutes, and a long cool before slicing.',
};

beforeAll(async () => {
  server = await EmbeddingServer.start();
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-vectors-'));
  kitchen = await Engines.fresh(Engines.current, 'vectors');
  env = { ...kitchen.env, LOG_LEVEL: 'silent', DEMO_DATA: 'false', EMBEDDER: 'openai', EMBEDDING_BASE_URL: server.url, EMBEDDING_MODEL: 'stand-in', EMBEDDING_API_KEY: 'sk-test' };
  const { store } = await Stores.open(kitchen.target);
  try {
    const profile = await store.profiles.create({ slug: 'kitchen', name: 'Kitchen Notes', visibility: 'public' });
    await store.channels.create({ id: 'ch_kitchen', profileId: profile.id, kind: 'user_upload', label: 'Notes', accessLevel: 'public', ratePerMillionTokens: 1 });
    for (const [file, content] of Object.entries(docs)) await Upload.ingest({ store }, { channelId: 'ch_kitchen', file, content, chunkTargetTokens: 320 });
    const account = await store.accounts.create({ name: 'buyer' });
    await store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 1000 });
    env.KEY = (await Keys.issue(store, { kind: 'api_key', accountId: account.id })).token;
  } finally {
    await store.close();
  }
});

afterAll(async () => {
  await server.close();
  await kitchen?.drop();
  fs.rmSync(directory, { recursive: true, force: true });
});

const cli = (...argv: string[]) => Cli.run(env, ...argv);

/**
 * A fusion as `profile-edge fit` would store one for an embedder that earned a weight. The stand-in embedder puts the
 * kitchen notes near 0.27 of an unrelated question and the synonym's note at 0.38 of its question: a fit centres there.
 */
async function storeFusion(embedderId: string): Promise<void> {
  const { store } = await Stores.open(kitchen.target);
  try {
    await store.vectors.setFusion(embedderId, Fusion.withSimilarity(Reranker.defaultModel, { mean: 0.3, scale: 0.05, weight: 8 }, Reranker.defaultModel.calibration, { fitted: true }));
  } finally {
    await store.close();
  }
}

const ask = async (services: Services.Services, question: string) =>
  (await Tools.invoke({ services, name: 'profile_query', args: { question, mode: 'raw', paymentMode: 'credits' }, presented: { apiKey: env.KEY, origin: 't' }, binding: { kind: 'profile', slug: 'kitchen' } })) as {
    chunks: { text: string }[];
    retrieval: { noRelevantContent: boolean };
  };

describe('OpenAiEmbedder', () => {
  test('behavior: sends the model, input and key; returns unit vectors in input order', async () => {
    const embedder = OpenAiEmbedder.create({ baseUrl: server.url, apiKey: 'sk-test', model: 'stand-in', batchSize: 2 });
    const vectors = await embedder.embed(['fridge door', 'oven steam', 'refrigerator door'], 'document');
    expect(vectors).toHaveLength(3);
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
    expect(cos(vectors[0]!, vectors[2]!)).toBeGreaterThan(0.99);
    expect(cos(vectors[0]!, vectors[1]!)).toBeLessThan(0.5);
    expect(server.requests.at(-1)).toMatchObject({ body: { model: 'stand-in', input: ['refrigerator door'] }, authorization: 'Bearer sk-test' });
  });

  test('error: an endpoint failure is a clear service_unavailable error', async () => {
    const embedder = OpenAiEmbedder.create({ baseUrl: server.url, model: 'stand-in' });
    server.failWith = 503;
    try {
      await expect(embedder.embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('503') });
    } finally {
      server.failWith = undefined;
    }
    await expect(OpenAiEmbedder.create({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000 }).embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable' });
  });

  test('error: an endpoint that never answers, or never finishes answering, fails at the timeout, not never', async () => {
    const answers = [
      // Accepts the connection and says nothing.
      () => {},
      // Sends its headers, then a byte of body now and then, forever.
      (socket: net.Socket) =>
        socket.once('data', () => {
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n');
          const drip = setInterval(() => socket.write('1\r\n \r\n'), 50);
          socket.on('close', () => clearInterval(drip));
        }),
    ];
    for (const answer of answers) {
      const endpoint = net.createServer(answer);
      await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
      const { port } = endpoint.address() as net.AddressInfo;
      try {
        const embedder = OpenAiEmbedder.create({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', timeoutMs: 300 });
        await expect(embedder.embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: 'embedding endpoint did not answer in time' });
      } finally {
        endpoint.close();
      }
    }
  });

  test('behavior: a kept-alive connection the endpoint closed as the request left is tried once more on a new one', async () => {
    let connections = 0;
    const body = JSON.stringify({ data: [{ index: 0, embedding: [3, 4] }] });
    const endpoint = net.createServer((socket) => {
      connections += 1;
      // The first connection is dropped as the request arrives, as a server's idle timeout can.
      if (connections === 1) return void socket.once('data', () => socket.destroy());
      socket.once('data', () => socket.end(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`));
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    const { port } = endpoint.address() as net.AddressInfo;
    try {
      const [vector] = await OpenAiEmbedder.create({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }).embed(['x'], 'query');
      expect([...vector!]).toEqual([expect.closeTo(0.6, 6), expect.closeTo(0.8, 6)]);
      expect(connections).toBe(2);
    } finally {
      endpoint.close();
    }
  });

  test("error: the caller's signal cancels a request in flight", async () => {
    const endpoint = net.createServer(() => {});
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    const { port } = endpoint.address() as net.AddressInfo;
    try {
      const caller = new AbortController();
      const pending = OpenAiEmbedder.create({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }).embed(['x'], 'query', { signal: caller.signal });
      setTimeout(() => caller.abort(new Error('the question went away')), 50);
      await expect(pending).rejects.toMatchObject({ code: 'service_unavailable', message: 'embedding request cancelled: the question went away' });
    } finally {
      endpoint.close();
    }
  });

  test('error: a body that is not embeddings for the input is a clear service_unavailable error', async () => {
    for (const body of ['<html>gateway</html>', '{"data":[]}', '{"data":[{"index":0,"embedding":["x"]}]}']) {
      const wrong = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
      await new Promise<void>((resolve) => wrong.listen(0, '127.0.0.1', resolve));
      const { port } = wrong.address() as net.AddressInfo;
      try {
        const embedder = OpenAiEmbedder.create({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' });
        await expect(embedder.embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('unexpected body') });
      } finally {
        wrong.close();
      }
    }
  });
});

describe('VectorIndex', () => {
  test('behavior: a zero vector has no direction: it is not stored, and as a query it finds nothing', () =>
    withStore(async (store) => {
      const profile = await store.profiles.create({ slug: 'zero', name: 'Zero', visibility: 'public' });
      await store.channels.create({ id: 'ch_zero', profileId: profile.id, kind: 'user_upload', label: 'Z', accessLevel: 'public', ratePerMillionTokens: 1 });
      for (const [file, content] of Object.entries(docs)) await Upload.ingest({ store }, { channelId: 'ch_zero', file, content, chunkTargetTokens: 320 });
      const rowids = (await store.chunks.page(0, 100)).map((c) => c.rowid);
      await store.vectors.create({ embedderId: 'test', dimensions: 2 });
      await store.vectors.put([{ rowid: rowids[0]!, vector: Float32Array.of(1, 0) }, { rowid: rowids[1]!, vector: Float32Array.of(0, 0) }]);
      expect(await store.vectors.count()).toBe(1);
      expect(await VectorCodes.nearest(store, { vector: Float32Array.of(0, 0), limit: 5, channelIds: ['ch_zero'] })).toEqual([]);
      expect(await VectorCodes.similarities(store, Float32Array.of(0, 0), rowids)).toEqual(new Map());
      expect(await VectorCodes.nearest(store, { vector: Float32Array.of(0.6, 0.8), limit: 5, channelIds: ['ch_zero'] })).toEqual([{ rowid: rowids[0], similarity: expect.closeTo(0.6, 5) }]);
    }));

  test('behavior: re-scoring returns exact cosine similarities, best first, ties to the earlier chunk', () =>
    withStore(async (store) => {
      const vectors = [unit(1, 0, 0, 0), unit(1, 1, 0, 0), unit(1, 1, 0, 0), unit(0, 0, 1, 0), unit(-1, 0.2, 0, 1)];
      const rowids = await stock(store, { channelId: 'ch_a', vectors, dimensions: 4 });
      const query = unit(1, 0.5, 0, 0);
      const hits = await VectorCodes.nearest(store, { vector: query, limit: 3, channelIds: ['ch_a'], oversample: 1 });
      expect(hits.map((h) => h.rowid)).toEqual([rowids[1], rowids[2], rowids[0]]);
      for (const hit of hits) expect(hit.similarity).toBeCloseTo(dot(vectors[rowids.indexOf(hit.rowid)]!, query), 6);
    }));

  test('behavior: the hits for a scope are the same with and without another channel whose chunks are nearer', () =>
    withStore(async (store) => {
      const query = unit(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
      // Public chunks at a middling angle to the question; a private channel's 150 chunks all lie nearer to it than
      // any of them, more than a global search that drops other channels' chunks would ever look past.
      const publicVectors = Array.from({ length: 12 }, (_, i) => unit(...Array.from({ length: 16 }, (_, d) => (d === 0 ? 1 : Math.sin(i * 7 + d * 3)))));
      await stock(store, { channelId: 'ch_public', vectors: publicVectors, dimensions: 16 });
      // A small oversample: a scan that looked past the scope would find only private candidates.
      const search = VectorSearch.create({ store, embedder: fixed(query), logger: silent(), oversample: 2 });
      const ask = async (channels: string[]) => (await search.question('q'))!.nearest(new Set(channels), 3);
      const before = await ask(['ch_public']);
      expect(before).toHaveLength(3);

      const privateVectors = Array.from({ length: 150 }, (_, i) => unit(...Array.from({ length: 16 }, (_, d) => (d === 0 ? 20 : Math.cos(i * 5 + d)))));
      const privateRowids = await stock(store, { channelId: 'ch_private', vectors: privateVectors, dimensions: 16, access: 'private' });
      expect((await ask(['ch_public', 'ch_private'])).every((h) => privateRowids.includes(h.rowid))).toBe(true);
      expect(await ask(['ch_public'])).toEqual(before);
      expect(await ask([])).toEqual([]);
    }));

  test('behavior: the scan finds what another connection wrote after it last looked, and reads a rebuilt index anew', () =>
    withTwoConnections(async (reader, writer, peek) => {
      const [first] = await stock(writer.store, { channelId: 'ch_codes', vectors: [unit(1, 0, 0)], dimensions: 3 });
      const near = async (vector: Float32Array) => (await VectorCodes.nearest(reader.store, { vector, limit: 5, channelIds: ['ch_codes', 'ch_later'] })).map((h) => h.rowid);
      expect(await near(unit(0, 1, 0))).toEqual([first]);
      const [later] = await stock(writer.store, { channelId: 'ch_later', vectors: [unit(0, 1, 0)], dimensions: 3 });
      expect(await near(unit(0, 1, 0))).toEqual([later, first]);
      await peek.run('DELETE FROM chunks WHERE rowid = ?', later!);
      expect(await near(unit(0, 1, 0))).toEqual([first]);
      // A rebuild with another dimension: what the reader held is of no use, and is dropped.
      await writer.store.vectors.create({ embedderId: 'fixed', dimensions: 2 });
      await writer.store.vectors.put([{ rowid: first!, vector: unit(0, 1) }]);
      expect(await VectorCodes.nearest(reader.store, { vector: unit(0, 1), limit: 5, channelIds: ['ch_codes'] })).toEqual([{ rowid: first, similarity: expect.closeTo(1, 6) }]);
    }));

  test('behavior: content replaced under reused rowids, and vectors written late, are found as they are now', () =>
    withTwoConnections(async (reader, writer, peek) => {
      const [first] = await stock(writer.store, { channelId: 'ch_old', vectors: [unit(1, 0, 0)], dimensions: 3 });
      const [bare] = await stock(writer.store, { channelId: 'ch_bare', vectors: [], dimensions: 3, chunks: 1 });
      const [top] = await stock(writer.store, { channelId: 'ch_new', vectors: [unit(0, 1, 0)], dimensions: 3 });
      // One candidate re-scored: which chunk it is depends only on the codes the reader holds.
      const nearest = async (vector: Float32Array) => (await VectorCodes.nearest(reader.store, { vector, limit: 1, channelIds: ['ch_old', 'ch_new'], oversample: 1 })).map((h) => h.rowid);
      expect(await nearest(unit(0, 1, 0))).toEqual([top]);
      // The newest item's content is replaced: SQLite gives its new chunk the rowid the old one had. PostgreSQL's
      // identity never hands out a rowid twice: there the new chunk is a plain newcomer.
      await writer.store.items.put(SearchTerms.indexed({ channelId: 'ch_new', externalId: 'item', title: 'ch-new', contentHash: 'changed', chunks: [{ text: 'replaced' }], vectors: [unit(0, 0, 1)] }));
      const [replaced] = await rowidsOf(writer.store, 'ch-new');
      if (Engines.current === 'sqlite') expect(replaced).toBe(top);
      else expect(replaced).toBeGreaterThan(top!);
      expect(await nearest(unit(0, 0, 1))).toEqual([replaced]);
      // A chunk stored without a vector, below rowids the reader has read, gets one later.
      expect(bare).toBeLessThan(top!);
      await writer.store.vectors.put([{ rowid: bare!, vector: unit(0, 0, 1) }]);
      expect((await VectorCodes.nearest(reader.store, { vector: unit(0, 0, 1), limit: 1, channelIds: ['ch_bare', 'ch_old'], oversample: 1 })).map((h) => h.rowid)).toEqual([bare]);
      expect(first).toBeLessThan(bare!);
      // Writes pruned from the log before the reader saw them: it reads every code anew.
      const pruned = await stock(writer.store, { channelId: 'ch_pruned', vectors: [unit(0, 1, 0), unit(0, 1, 0)], dimensions: 3 });
      await peek.run('DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)');
      expect((await VectorCodes.nearest(reader.store, { vector: unit(0, 1, 0), limit: 2, channelIds: ['ch_pruned'], oversample: 1 })).map((h) => h.rowid)).toEqual(pruned);
    }));

  // sqlite-vec's tables of before exist only in SQLite stores (PostgreSQL stores began with migration 10's layout):
  // these cases build them on SQLite's own connection (test/support/SqliteFile.ts), and see SQLite carry them over.
  sqliteOnly('behavior: an index built before the vector log gets one when its store is opened, its sign table is dropped, and writes after it are followed', async () => {
    // The store as a version before migration 10 left it: floats beside sqlite-vec's sign table, and no vector log.
    const place = await Engines.fresh('sqlite', 'unlogged');
    const old = SqliteFile.open(place.env.DATABASE_PATH!);
    const db = old.db;
    let first: number | undefined;
    try {
      [first] = await stock(old.store, { channelId: 'ch_one', vectors: [unit(1, 0, 0)], dimensions: 3 });
      signsLayout(db, { logged: false });
      expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE 'chunk_embeddings_%' OR name = 'vector_log'").pluck().get()).toBe(0);
      expect(db.prepare('SELECT count(*) FROM chunk_vectors').pluck().get()).toBe(1);
    } finally {
      await old.store.close();
    }
    await withTwoConnections(async (reader, writer, peek) => {
      // Opening the store migrated it: the log and its triggers are there before anything is read.
      expect(await peek.value("SELECT count(*) FROM sqlite_master WHERE name LIKE 'chunk_embeddings_%' OR name = 'vector_log'")).toBe(3);
      const near = async (vector: Float32Array) => (await VectorCodes.nearest(reader.store, { vector, limit: 1, channelIds: ['ch_one', 'ch_two'], oversample: 1 })).map((h) => h.rowid);
      expect(await near(unit(0, 1, 0))).toEqual([first]);
      expect(await peek.column(legacyObjectsQuery)).toEqual([]);
      await writer.store.vectors.put([{ rowid: first!, vector: unit(0, 0, 1) }]);
      const [second] = await stock(writer.store, { channelId: 'ch_two', vectors: [unit(0, 1, 0)], dimensions: 3 });
      expect(await near(unit(0, 0, 1))).toEqual([first]);
      expect(await near(unit(0, 1, 0))).toEqual([second]);
      // The sign table's delete trigger went with it; the migration's keeps the floats to live chunks.
      await peek.run('DELETE FROM chunks WHERE rowid = ?', second!);
      expect(await writer.store.vectors.count()).toBe(1);
      expect(await near(unit(0, 1, 0))).toEqual([first]);
    }, place);
  });

  sqliteOnly('behavior: an index of signs beside its floats, from before migration 10, is carried over: the sign table is dropped, nothing is lost', async () => {
    const place = await Engines.fresh('sqlite', 'signs');
    const vectors = [unit(1, 0, 0), unit(0, 1, 0), unit(0.9, 0.1, 0.2)];
    const old = SqliteFile.open(place.env.DATABASE_PATH!);
    let rowids: number[];
    try {
      rowids = await stock(old.store, { channelId: 'ch_a', vectors, dimensions: 3 });
      signsLayout(old.db, { logged: true });
      expect(old.db.prepare('SELECT count(*) FROM chunk_vectors').pluck().get()).toBe(3);
    } finally {
      await old.store.close();
    }
    // Opened anew, as the version after it opens it; SQLite's tables read beside it.
    const { store } = await Stores.open(place.target);
    const peek = await Peek.open(place.env);
    try {
      expect(await peek.column(legacyObjectsQuery)).not.toEqual([]);
      // Only the floats are read: nothing needs carrying.
      expect(await store.vectors.upgrade()).toBe(0);
      expect(await peek.column(legacyObjectsQuery)).toEqual([]);
      expect(await store.vectors.count()).toBe(3);
      const probe = unit(1, 0.1, 0.2);
      const hits = await VectorCodes.nearest(store, { vector: probe, limit: 5, channelIds: ['ch_a'] });
      expect(hits.map((h) => h.rowid)).toEqual([rowids[2], rowids[0], rowids[1]]);
      await peek.run('DELETE FROM chunks WHERE rowid = ?', rowids[2]!);
      expect(await store.vectors.count()).toBe(2);
    } finally {
      await peek.close();
      await store.close();
      await place.drop();
    }
  });

  test('behavior: with enough oversampling the sign scan returns the exact nearest chunks', () =>
    withStore(async (store) => {
      let seed = 5;
      const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5;
      const vectors = Array.from({ length: 300 }, () => unit(...Array.from({ length: 40 }, random)));
      const rowids = await stock(store, { channelId: 'ch_many', vectors, dimensions: 40 });
      for (let q = 0; q < 5; q++) {
        const query = unit(...Array.from({ length: 40 }, random));
        const exact = vectors.map((v, i) => [dot(v, query), rowids[i]!] as const).sort((a, b) => b[0] - a[0]).slice(0, 10).map(([, r]) => r);
        expect((await VectorCodes.nearest(store, { vector: query, limit: 10, channelIds: ['ch_many'], oversample: 30 })).map((h) => h.rowid)).toEqual(exact);
      }
    }));

  sqliteOnly('behavior: an index of floats alone, built before quantization, is upgraded once from its stored vectors', async () => {
    const { store, db } = SqliteFile.open(':memory:');
    try {
      const vectors = [unit(1, 0, 0), unit(0, 1, 0), unit(0.9, 0.1, 0.2), unit(0, 0, 0)];
      const rowids = await stock(store, { channelId: 'ch_a', vectors: [], dimensions: 3, chunks: vectors.length });
      floatsOnly(db, rowids.slice(0, 3), vectors.slice(0, 3));
      // Counting would carry it over itself: the legacy table is counted directly.
      expect(db.prepare('SELECT count(*) FROM chunk_vectors').pluck().get()).toBe(3);

      const logger = silent();
      const probe = unit(1, 0.1, 0.2);
      const search = VectorSearch.create({ store, embedder: fixed(probe), logger });
      // A question waits for the upgrade the search began when it was created.
      const question = (await search.question('q'))!;
      expect(logger.lines).toContainEqual(['info', expect.stringContaining('upgraded'), { vectors: 3 }]);
      expect(await store.vectors.upgrade()).toBe(0);
      expect(legacyObjects(db)).toEqual([]);
      expect(await store.vectors.count()).toBe(3);
      const hits = await question.nearest(new Set(['ch_a']), 5);
      expect(hits.map((h) => h.rowid)).toEqual([rowids[2], rowids[0], rowids[1]]);
      expect(hits[0]!.score).toBeCloseTo(dot(vectors[2]!, probe), 6);
      // Still kept current from the chunk transaction and the delete trigger.
      db.prepare('DELETE FROM chunks WHERE rowid = ?').run(rowids[2]);
      await store.vectors.put([{ rowid: rowids[3]!, vector: probe }]);
      expect(await store.vectors.count()).toBe(3);
      expect((await (await search.question('q'))!.nearest(new Set(['ch_a']), 1))[0]).toEqual({ rowid: rowids[3], score: expect.closeTo(1, 6) });
      await expect(store.vectors.put([{ rowid: rowids[3]!, vector: unit(1, 0) }])).rejects.toThrow(/2 dimensions for an index of 3/);
    } finally {
      await store.close();
    }
  });

  sqliteOnly('behavior: a write to an index of floats alone upgrades it first, inside the chunk transaction', async () => {
    const { store, db } = SqliteFile.open(':memory:');
    try {
      const rowids = await stock(store, { channelId: 'ch_a', vectors: [], dimensions: 3, chunks: 2 });
      floatsOnly(db, rowids, [unit(1, 0, 0), unit(0, 1, 0)]);
      const channel = await store.channels.create({ id: 'ch_b', profileId: (await store.profiles.list())[0]!.id, kind: 'user_upload', label: 'b', accessLevel: 'public', ratePerMillionTokens: 1 });
      await store.items.put(SearchTerms.indexed({ channelId: channel.id, externalId: 'b', title: 'b', contentHash: 'b', chunks: [{ text: 'b' }], vectors: [unit(0, 0, 1)] }));
      expect(legacyObjects(db)).toEqual([]);
      expect(await store.vectors.count()).toBe(3);
      expect((await VectorCodes.nearest(store, { vector: unit(0.1, 0.2, 1), limit: 5, channelIds: ['ch_a'] })).map((h) => h.rowid)).toEqual([rowids[1], rowids[0]]);
      expect((await VectorCodes.nearest(store, { vector: unit(0.1, 0.2, 1), limit: 1, channelIds: ['ch_a', 'ch_b'] }))[0]!.similarity).toBeCloseTo(dot(unit(0, 0, 1), unit(0.1, 0.2, 1)), 6);
    } finally {
      await store.close();
    }
  });
});

/**
 * Gives an index with no vectors yet the layout VectorIndex.create wrote before quantization, as a store of then is
 * once migration 10 has run on it: the floats in one vec0 table alone, `chunk_embeddings` empty.
 */
function floatsOnly(db: SqliteFile.Connection, rowids: number[], vectors: Float32Array[]): void {
  expect(db.prepare('SELECT count(*) FROM chunk_embeddings').pluck().get()).toBe(0);
  db.exec(`CREATE VIRTUAL TABLE chunk_vectors USING vec0(embedding float[${vectors[0]!.length}] distance_metric=cosine)`);
  db.exec('CREATE TRIGGER chunks_vectors_delete AFTER DELETE ON chunks BEGIN DELETE FROM chunk_vectors WHERE rowid = old.rowid; END;');
  const insert = db.prepare('INSERT INTO chunk_vectors (rowid, embedding) VALUES (?, ?)');
  vectors.forEach((v, i) => insert.run(BigInt(rowids[i]!), Buffer.from(v.buffer)));
}

/**
 * Gives an index the layout VectorIndex.create wrote after quantization, before migration 10 (not applied: reopen the
 * file to have it run): the floats in `chunk_embeddings`, their signs in a sqlite-vec table filed by channel number,
 * one trigger deleting both with their chunk. `logged: false` is the layout from before the vector log too.
 */
function signsLayout(db: SqliteFile.Connection, options: { logged: boolean }): void {
  const { dimensions } = VectorIndex.describedIn(db.prepare("SELECT value FROM meta WHERE key = 'vector_index'").pluck().get() as string | undefined)!;
  db.exec('DROP TRIGGER chunks_embeddings_delete');
  db.exec('CREATE TABLE vector_channels (id INTEGER PRIMARY KEY, channel_id TEXT NOT NULL UNIQUE) STRICT');
  db.exec(`CREATE VIRTUAL TABLE chunk_vectors USING vec0(channel integer, code bit[${Math.ceil(dimensions / 8) * 8}], chunk_size=64)`);
  db.exec(`CREATE TRIGGER chunks_vectors_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE rowid = old.rowid;
    DELETE FROM chunk_embeddings WHERE rowid = old.rowid;
  END;`);
  const rows = db.prepare('SELECT e.rowid AS rowid, e.embedding AS embedding, i.channel_id AS channel FROM chunk_embeddings e JOIN chunks c ON c.rowid = e.rowid JOIN items i ON i.id = c.item_id').all() as { rowid: number; embedding: Buffer; channel: string }[];
  for (const row of rows) {
    db.prepare('INSERT INTO vector_channels (channel_id) VALUES (?) ON CONFLICT (channel_id) DO NOTHING').run(row.channel);
    const channel = db.prepare('SELECT id FROM vector_channels WHERE channel_id = ?').pluck().get(row.channel) as number;
    const vector = new Float32Array(Uint8Array.from(row.embedding).buffer);
    const code = Buffer.alloc(Math.ceil(dimensions / 8));
    vector.forEach((x, i) => void (x > 0 && (code[i >> 3]! |= 1 << (i & 7))));
    db.prepare('INSERT INTO chunk_vectors (rowid, channel, code) VALUES (?, ?, vec_bit(?))').run(BigInt(row.rowid), BigInt(channel), code);
  }
  if (!options.logged) db.exec('DROP TRIGGER chunk_embeddings_written; DROP TRIGGER chunk_embeddings_deleted; DROP TABLE vector_log');
  db.prepare('DELETE FROM schema_migrations WHERE version = 10').run();
}

/** What is left of sqlite-vec's table of before (it, its shadow tables, its channel numbers, its trigger). */
const legacyObjectsQuery = "SELECT name FROM sqlite_master WHERE name LIKE 'chunk_vectors%' OR name IN ('vector_channels', 'chunks_vectors_delete') ORDER BY name";
const legacyObjects = (db: SqliteFile.Connection) => db.prepare(legacyObjectsQuery).pluck().all();

const unit = (...values: number[]) => {
  const norm = Math.hypot(...values);
  return Float32Array.from(values, (x) => (norm ? x / norm : 0));
};
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const fixed = (vector: Float32Array): Embedder => ({ id: 'fixed', embed: async (texts) => texts.map(() => vector) });
const silent = () => {
  const lines: [string, string, Record<string, unknown> | undefined][] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push([level, message, fields]);
  return Object.assign({ debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } satisfies Logger, { lines });
};

/** A fresh, empty store on this run's engine for one case, removed after it. */
async function withStore(run: (store: Stores.Store) => Promise<void>): Promise<void> {
  const place = await Engines.fresh(Engines.current, 'vectors-case');
  const { store } = await Stores.open(place.target);
  try {
    await run(store);
  } finally {
    await store.close();
    await place.drop();
  }
}

type Connection = { store: Stores.Store };

/**
 * Two connections to one store (a fresh one on this run's engine unless given; removed after), as a server and a sync
 * in another process have, each with the one Store over it (which holds that connection's codes in memory); and a
 * peek that changes its tables behind both, as another process would.
 */
async function withTwoConnections(run: (reader: Connection, writer: Connection, peek: Peek.Peek) => Promise<void>, place?: Place): Promise<void> {
  const shared = place ?? (await Engines.fresh(Engines.current, 'vectors-two'));
  const opened: Stores.OpenStore[] = [];
  let peek: Peek.Peek | undefined;
  const connect = async (): Promise<Connection> => {
    const { store } = await Stores.open(shared.target);
    opened.push(store);
    return { store };
  };
  try {
    const reader = await connect();
    const writer = await connect();
    peek = await Peek.open(shared.env);
    await run(reader, writer, peek);
  } finally {
    await peek?.close();
    for (const store of opened) await store.close();
    await shared.drop();
  }
}

/** The rowids of the chunks of the item titled `title` (`stock` titles a channel's item after its slug), in order. */
async function rowidsOf(store: Stores.Store, title: string): Promise<number[]> {
  return (await store.chunks.page(0, 100_000)).filter((c) => c.title === title).map((c) => c.rowid);
}

/** A channel with one item of `chunks` chunks (one per vector unless given), indexed with those vectors; its chunk rowids. */
async function stock(
  store: Stores.Store,
  options: { channelId: string; vectors: Float32Array[]; dimensions: number; chunks?: number; access?: 'public' | 'private' },
): Promise<number[]> {
  const slug = options.channelId.replace(/_/g, '-');
  const profile = await store.profiles.create({ slug, name: slug, visibility: 'public' });
  await store.channels.create({ id: options.channelId, profileId: profile.id, kind: 'user_upload', label: slug, accessLevel: options.access ?? 'public', ratePerMillionTokens: 1 });
  if (!(await store.vectors.info())) await store.vectors.create({ embedderId: 'fixed', dimensions: options.dimensions });
  const count = options.chunks ?? options.vectors.length;
  await store.items.put(SearchTerms.indexed({
    channelId: options.channelId,
    externalId: 'item',
    title: slug,
    contentHash: slug,
    chunks: Array.from({ length: count }, (_, i) => ({ text: `chunk ${i} of ${slug}` })),
    vectors: options.vectors.length ? options.vectors : undefined,
  }));
  return rowidsOf(store, slug);
}

/** A tiny local model: kitchen-cold words on one axis, baking words on another; every other word is unknown (zero). */
const tinyVectors = {
  ...Object.fromEntries(['cold', 'fridge', 'refrigerator', 'chiller', 'dairy', 'leftovers', 'degrees'].map((w) => [w, [1, 0.05, 0]])),
  ...Object.fromEntries(['sourdough', 'loaf', 'oven', 'steam', 'bread', 'flour', 'slicing'].map((w) => [w, [0.05, 1, 0]])),
};
const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

describe('VectorSearch', () => {
  test('behavior: a question whose embedding is late or fails goes lexical, said once until vectors work again', () =>
    withStore(async (store) => {
      await stock(store, { channelId: 'ch_a', vectors: [unit(1, 0)], dimensions: 2 });
      let mode: 'hang' | 'fail' | 'work' = 'hang';
      const signals: AbortSignal[] = [];
      const embedder: Embedder = {
        id: 'fixed',
        embed: (texts, _purpose, options) => {
          if (options?.signal) signals.push(options.signal);
          if (mode === 'hang') return new Promise(() => {});
          return mode === 'fail' ? Promise.reject(new Error('endpoint down')) : Promise.resolve(texts.map(() => unit(1, 0)));
        },
      };
      const logger = silent();
      const search = VectorSearch.create({ store, embedder, logger, questionTimeoutMs: 50 });
      expect(await search.question('q')).toBeUndefined();
      expect(signals[0]!.aborted).toBe(true);
      expect(await search.question('q')).toBeUndefined();
      mode = 'fail';
      expect(await search.question('q')).toBeUndefined();
      expect(await search.question('q')).toBeUndefined();
      const said = () => logger.lines.filter(([level]) => level !== 'debug').map(([level, message, fields]) => [level, message.split(':')[0], fields?.error]);
      expect(said()).toEqual([
        ['info', expect.stringContaining('not fitted'), undefined],
        ['warn', 'vector search unavailable', 'no answer within 50 ms (EMBEDDING_QUESTION_TIMEOUT_MS)'],
      ]);
      expect(logger.lines.filter(([level]) => level === 'debug')).toHaveLength(3);
      mode = 'work';
      expect(await (await search.question('q'))?.nearest(new Set(['ch_a']), 1)).toHaveLength(1);
      // The first question answered with vectors reads the codes, and says so.
      expect(said().slice(-2)).toEqual([
        ['info', 'vector search available again', undefined],
        ['info', 'vector index loaded', undefined],
      ]);
    }));

  test('behavior: an index rebuilt for another embedder since the search began is not searched', () =>
    withStore(async (store) => {
      await stock(store, { channelId: 'ch_a', vectors: [unit(1, 0)], dimensions: 2 });
      const logger = silent();
      const search = VectorSearch.create({ store, embedder: fixed(unit(1, 0)), logger });
      await search.warm();
      expect(logger.lines.at(-1)).toEqual(['info', 'vector index loaded', { vectors: 1, source: 'rows', ms: expect.any(Number) }]);
      expect(await search.question('q')).toBeDefined();
      await store.vectors.markBuilt(VectorIndex.building('other'));
      expect(await search.question('q')).toBeUndefined();
      expect(logger.lines.at(-1)).toEqual(['warn', expect.stringContaining("not this embedder's"), { configured: 'fixed', indexed: 'other (building)' }]);
    }));
});

describe('TransformersEmbedder (transformers.js with a local ONNX model)', () => {
  test('behavior: embeds with the local model: unit vectors in input order, across batches', async () => {
    const modelDir = TinyOnnxModel.write(path.join(directory, 'models', 'tiny'), tinyVectors);
    const embedder = TransformersEmbedder.create({ modelDir, batchSize: 2 });
    expect(embedder.id).toBe('transformers:tiny');
    const vectors = await embedder.embed(['The fridge door', 'Steam in the oven', 'A refrigerator at four degrees'], 'document');
    expect(vectors).toHaveLength(3);
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    expect(cos(vectors[0]!, vectors[2]!)).toBeGreaterThan(0.99);
    expect(cos(vectors[0]!, vectors[1]!)).toBeLessThan(0.2);
  });

  test('error: a directory without a model is service_unavailable naming it, and the next call loads it once it is there', async () => {
    const modelDir = path.join(directory, 'models', 'later');
    const embedder = TransformersEmbedder.create({ modelDir });
    await expect(embedder.embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining(`${modelDir} has no onnx/model.onnx`) });
    TinyOnnxModel.write(modelDir, tinyVectors);
    expect(await embedder.embed(['cold fridge'], 'query')).toHaveLength(1);
  });

  test('error: a broken model file is service_unavailable, not a crash', async () => {
    const modelDir = TinyOnnxModel.write(path.join(directory, 'models', 'broken'), tinyVectors);
    fs.writeFileSync(path.join(modelDir, 'onnx', 'model.onnx'), 'not a model');
    await expect(TransformersEmbedder.create({ modelDir }).embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('could not load the model') });
  });

  test('error: without the optional package it says how to install it', async () => {
    const embedder = TransformersEmbedder.create({ modelDir: path.join(directory, 'no-model'), importLibrary: () => Promise.reject(new Error("Cannot find package '@huggingface/transformers'")) });
    await expect(embedder.embed(['x'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('npm install @huggingface/transformers') });
  });

  test('behavior: texts of any length come back in input order when batched by length', async () => {
    const modelDir = TinyOnnxModel.write(path.join(directory, 'models', 'order'), tinyVectors);
    const texts = ['fridge', 'sourdough loaf in a hot oven with steam and flour', 'cold', 'bread slicing', 'leftovers kept at four degrees in the chiller'];
    const batched = await TransformersEmbedder.create({ modelDir, batchSize: 2 }).embed(texts, 'document');
    const single = await TransformersEmbedder.create({ modelDir, batchSize: 1 });
    for (const [i, text] of texts.entries()) expect([...batched[i]!]).toEqual([...(await single.embed([text], 'document'))[0]!]);
  });

  test('behavior: CLS pooling returns the [CLS] vector, mean pooling the average of the words, and the id tells them apart', async () => {
    const modelDir = TinyOnnxModel.write(path.join(directory, 'models', 'pooled'), { ...tinyVectors, '[CLS]': [0, 0, 1] });
    const cls = TransformersEmbedder.create({ modelDir, pooling: 'cls' });
    const mean = TransformersEmbedder.create({ modelDir, pooling: 'mean' });
    expect(cls.id).toBe('transformers:pooled:cls');
    expect(mean.id).toBe('transformers:pooled');
    const [a, b] = await cls.embed(['cold fridge', 'sourdough loaf'], 'document');
    expect([...a!]).toEqual([0, 0, 1]);
    expect([...b!]).toEqual([0, 0, 1]);
    const [c] = await mean.embed(['cold fridge'], 'document');
    expect(c![0]).toBeGreaterThan(0.8);
    expect([...c!]).not.toEqual([...a!]);
  });

  test('behavior: EMBEDDING_PRECISION=q8 runs the quantized export, and says which file is missing', async () => {
    const modelDir = TinyOnnxModel.write(path.join(directory, 'models', 'quantized'), tinyVectors);
    const q8 = Embedders.create(Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: modelDir, EMBEDDING_PRECISION: 'q8' }).embedding)!;
    expect(q8.id).toBe('transformers:quantized:q8');
    await expect(q8.embed(['cold'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('has no onnx/model_quantized.onnx') });
    // The quantized file holds other weights here, so the vectors show which file ran.
    TinyOnnxModel.write(modelDir, { ...tinyVectors, cold: [0, 0, 1] }, { file: 'model_quantized.onnx' });
    expect([...(await q8.embed(['cold'], 'query'))[0]!]).toEqual([0, 0, 1]);
  });

  test('behavior: a preset, named or implied by the model directory, sets pooling and prefixes; explicit settings win', async () => {
    const words = { ...tinyVectors, query: [0, 0, 1], passage: [0, 1, 1] };
    const e5Dir = TinyOnnxModel.write(path.join(directory, 'models', 'e5-small-v2'), words);
    const plainDir = TinyOnnxModel.write(path.join(directory, 'models', 'plain'), words);
    const plain = TransformersEmbedder.create({ modelDir: plainDir });
    const e5 = Embedders.create(Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: e5Dir }).embedding)!;
    expect(e5.id).toMatch(/^transformers:e5-small-v2:prefixes-[0-9a-f]{8}$/);
    expect([...(await e5.embed(['cold'], 'query'))[0]!]).toEqual([...(await plain.embed(['query: cold'], 'query'))[0]!]);
    expect([...(await e5.embed(['cold'], 'document'))[0]!]).toEqual([...(await plain.embed(['passage: cold'], 'document'))[0]!]);
    // Named for a directory whose name says nothing, and a setting overriding one part of it.
    const named = Embedders.create(Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: plainDir, EMBEDDING_PRESET: 'e5-small-v2', EMBEDDING_DOCUMENT_PREFIX: 'passage passage ' }).embedding)!;
    expect([...(await named.embed(['cold'], 'query'))[0]!]).toEqual([...(await plain.embed(['query: cold'], 'query'))[0]!]);
    expect([...(await named.embed(['cold'], 'document'))[0]!]).toEqual([...(await plain.embed(['passage passage cold'], 'document'))[0]!]);
    expect(named.id).not.toBe(e5.id);
    // `none` uses a model plainly even when its name matches a preset.
    const none = Embedders.create(Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: e5Dir, EMBEDDING_PRESET: 'none' }).embedding)!;
    expect(none.id).toBe('transformers:e5-small-v2');
    expect([...(await none.embed(['cold'], 'query'))[0]!]).toEqual([...(await plain.embed(['cold'], 'query'))[0]!]);
    const bge = Embedders.create(Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: path.join(directory, 'models', 'bge-small-en-v1.5') }).embedding)!;
    expect(bge.id).toMatch(/^transformers:bge-small-en-v1\.5:cls:prefixes-/);
    // An endpoint gets the prefixes of the model it names.
    expect(Embedders.create(Config.load({ EMBEDDER: 'openai', EMBEDDING_MODEL: 'intfloat/e5-small-v2' }).embedding)!.id).toMatch(/^openai:intfloat\/e5-small-v2:prefixes-/);
  });

  test('error: pooling or precision for an endpoint, or an unknown preset, is a configuration error', () => {
    expect(() => Config.load({ EMBEDDER: 'openai', EMBEDDING_POOLING: 'cls' })).toThrow(/EMBEDDING_POOLING: applies to EMBEDDER=transformers only/);
    expect(() => Config.load({ EMBEDDER: 'openai', EMBEDDING_PRECISION: 'q8' })).toThrow(/EMBEDDING_PRECISION/);
    expect(() => Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: '/m', EMBEDDING_PRESET: 'bert-huge' })).toThrow(/EMBEDDING_PRESET/);
    expect(() => Config.load({ EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: '/m', EMBEDDING_BATCH_SIZE: '0' })).toThrow(/EMBEDDING_BATCH_SIZE/);
  });

  test('error: EMBEDDER=transformers without a model directory is a configuration error', () => {
    expect(() => Config.load({ EMBEDDER: 'transformers' })).toThrow(/EMBEDDING_MODEL_DIR/);
  });
});

describe('profile-edge reindex and vector retrieval', () => {
  test('behavior: a synonym the index lacks is found once vectors are built and their fusion is fitted', async () => {
    const lexical = await Services.create(Config.load({ ...env, EMBEDDER: 'none' }));
    try {
      expect((await ask(lexical, 'How cold should the fridge be?')).chunks.some((c) => c.text.includes('refrigerator'))).toBe(false);
    } finally {
      await lexical.close();
    }
    const run = await cli('reindex', '--batch', '1');
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('reindex openai:stand-in 2/2');
    expect(run.stdout).toContain('2 of 2 chunks embedded');
    expect(run.stdout).toContain('vector fusion is not fitted for this embedder');
    const unfitted = await Services.create(Config.load(env));
    try {
      // Until a fit says how much similarity is worth, it weighs nothing: the question is not even embedded.
      expect((await unfitted.vectors!.fusion()).fitted).toBe(false);
      const sent = server.requests.length;
      expect((await ask(unfitted, 'How cold should the fridge be?')).retrieval.noRelevantContent).toBe(true);
      expect(server.requests.length).toBe(sent);
    } finally {
      await unfitted.close();
    }
    await storeFusion('openai:stand-in');
    const services = await Services.create(Config.load(env));
    try {
      expect((await services.vectors!.fusion()).fitted).toBe(true);
      const answer = await ask(services, 'How cold should the fridge be?');
      expect(answer.retrieval.noRelevantContent).toBe(false);
      expect(answer.chunks[0]!.text).toContain('refrigerator');
    } finally {
      await services.close();
    }
  });

  test('behavior: an embedding endpoint that stops answering is skipped after repeated timeouts (answers are lexical without waiting for it, and say so), and used again once it recovers, without a restart', async () => {
    const services = await Services.create(Config.load({ ...env, EMBEDDING_QUESTION_TIMEOUT_MS: '300', BREAKER_FAILURES: '2', BREAKER_COOL_SECONDS: '1' }));
    // A question embedded once is remembered: each one here is written anew (its words the same), so that it would
    // reach the endpoint.
    let asked = 0;
    const fridge = () => `How cold should the fridge be${'?'.repeat((asked += 1))}`;
    const timed = async (question: string) => {
      const started = performance.now();
      const answer = (await ask(services, question)) as Awaited<ReturnType<typeof ask>> & { retrieval: { diagnostics: { degraded?: string[]; confidenceReasons: string[] } } };
      return { answer, ms: performance.now() - started };
    };
    try {
      expect((await timed(fridge())).answer.retrieval.diagnostics.degraded).toBeUndefined();
      server.delayMs = 5_000;
      // Two questions wait out the timeout; then the breaker opens and no question waits for the endpoint.
      for (let i = 0; i < 2; i++) {
        const { answer, ms } = await timed(fridge());
        expect(ms).toBeGreaterThanOrEqual(290);
        expect(answer.retrieval.diagnostics.degraded).toEqual(['vectors']);
      }
      expect(services.breakers.embedder.state()).toBe('open');
      const arrived = server.arrived;
      for (let i = 0; i < 5; i++) {
        const { answer } = await timed(fridge());
        expect(answer.retrieval.diagnostics.degraded).toEqual(['vectors']);
        expect(answer.retrieval.diagnostics.confidenceReasons.join(' ')).toContain('Ranked by words alone');
      }
      const metrics = (await services.metrics.render()).body;
      expect(metrics).toMatch(/profile_edge_dependency_failures_total\{dependency="embedder",kind="timeout"\} 2/);
      expect(metrics).toMatch(/profile_edge_dependency_failures_total\{dependency="embedder",kind="skipped"\} 5/);
      expect(metrics).toMatch(/profile_edge_breaker_state\{dependency="embedder"\} 1/);
      // Skipped: not one of those questions reached the endpoint (none waited for it).
      expect(server.arrived).toBe(arrived);
      server.delayMs = 0;
      // The endpoint is back; after the cooling period the next question probes it, and vectors count again.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const back = await timed(fridge());
      expect(back.answer.retrieval.diagnostics.degraded).toBeUndefined();
      expect(back.answer.chunks[0]!.text).toContain('refrigerator');
      expect(server.arrived).toBe(arrived + 1);
      expect(services.breakers.embedder.state()).toBe('closed');
    } finally {
      server.delayMs = 0;
      await services.close();
    }
  });

  test('behavior: vectors do not lift unrelated text over the floor', async () => {
    const services = await Services.create(Config.load(env));
    try {
      expect((await ask(services, 'Which electric car has the longest range?')).retrieval.noRelevantContent).toBe(true);
    } finally {
      await services.close();
    }
  });

  test('error: a reindex that fails half-way is never searched', async () => {
    server.failAfter = server.requests.length + 1;
    try {
      const run = await cli('reindex', '--batch', '1', '--no-terms');
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('embedding endpoint answered 500');
    } finally {
      server.failAfter = undefined;
    }
    const services = await Services.create(Config.load(env));
    try {
      expect(services.vectors).toBeUndefined();
      expect((await ask(services, 'How should a sourdough loaf be baked in the oven?')).chunks[0]!.text).toContain('sourdough');
    } finally {
      await services.close();
    }
    expect((await cli('reindex', '--no-terms')).code).toBe(0);
  });

  test('behavior: new uploads are embedded as they are stored; replaced chunks lose their vectors', async () => {
    const file = path.join(directory, 'pantry.txt');
    fs.writeFileSync(file, 'Flour keeps best in an airtight tin away from the chiller and the oven.');
    expect((await cli('upload', '--channel', 'ch_kitchen', file)).code).toBe(0);
    const { store } = await Stores.open(kitchen.target);
    const peek = await Peek.open(kitchen.env);
    try {
      expect(await store.vectors.count()).toBe(3);
      fs.writeFileSync(file, 'Rye flour keeps for three months in a cool cupboard.');
      await Upload.ingest({ store }, { channelId: 'ch_kitchen', file, chunkTargetTokens: 320, embedder: OpenAiEmbedder.create({ baseUrl: server.url, model: 'stand-in' }) });
      expect(await store.vectors.count()).toBe(3);
      expect(await peek.value('SELECT count(*) FROM chunk_embeddings e LEFT JOIN chunks c ON c.rowid = e.rowid WHERE c.rowid IS NULL')).toBe(0);
    } finally {
      await peek.close();
      await store.close();
    }
  });

  test('behavior: when the embedding endpoint fails at query time, answers come from the lexical index', async () => {
    const services = await Services.create(Config.load(env));
    server.failWith = 500;
    try {
      const answer = await ask(services, 'How should a sourdough loaf be baked in the oven?');
      expect(answer.chunks[0]!.text).toContain('sourdough');
    } finally {
      server.failWith = undefined;
      await services.close();
    }
  });

  test('behavior: with EMBEDDER=none, reindex removes the vector index', async () => {
    env.EMBEDDER = 'none';
    try {
      const run = await cli('reindex');
      expect(run.stdout).toContain('lexical only');
      const { store } = await Stores.open(kitchen.target);
      try {
        expect(await store.vectors.info()).toBeUndefined();
      } finally {
        await store.close();
      }
    } finally {
      env.EMBEDDER = 'openai';
    }
  });

  test('behavior: EMBEDDER=transformers reindexes with the local model, and its vectors find the synonym', async () => {
    const modelDir = TinyOnnxModel.write(path.join(directory, 'models', 'kitchen'), tinyVectors);
    const local = { EMBEDDER: 'transformers', EMBEDDING_MODEL_DIR: modelDir };
    const saved = { ...env };
    Object.assign(env, local);
    try {
      const run = await cli('reindex', '--no-terms');
      expect(run.code).toBe(0);
      expect(run.stderr).toContain('reindex transformers:kitchen');
      await storeFusion('transformers:kitchen');
      const services = await Services.create(Config.load(env));
      try {
        const answer = await ask(services, 'How cold should the fridge be?');
        expect(answer.chunks[0]!.text).toContain('refrigerator');
        // None of its words are known to the model: its zero vector is near nothing.
        expect((await ask(services, 'Which electric car has the longest range?')).retrieval.noRelevantContent).toBe(true);
      } finally {
        await services.close();
      }
    } finally {
      env = saved;
    }
  });
});
