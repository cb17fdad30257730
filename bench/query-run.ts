/**
 * One size of the query benchmark, in its own process so its peak memory is its own (run by bench/query.ts).
 * Builds or reuses a synthetic store of SciFact sentences, then measures, over the same 200 SciFact train queries:
 * the first stage alone (pruned MaxScore over the search threads `serve` would use, and on one thread; the same index
 * scoring every match, and SQLite FTS5's exhaustive BM25 as the reference), whether the pruned top 100 equals the exhaustive top 100, raw-mode global queries through the tool
 * handler and over HTTP, the cost of writing chunks with the index kept current, memory and bytes on disk.
 * Prints one JSON line.
 *
 * `--engine postgres` builds and measures the same store in PostgreSQL: a database per size (`profile_edge_bench_<size>`)
 * beside PROFILE_EDGE_BENCH_POSTGRES, or DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres, kept between
 * runs like the SQLite file and rebuilt when a build did not finish. FTS5, the reference, exists only on SQLite.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as Config from '../src/config/Config.js';
import { projectRoot } from '../src/config/Config.js';
import * as Beir from '../src/eval/Beir.js';
import * as Fusion from '../src/retrieval/ranking/Fusion.js';
import * as Reranker from '../src/retrieval/ranking/Reranker.js';
import * as LexicalIndex from '../src/retrieval/index/LexicalIndex.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as TermModel from '../src/retrieval/terms/TermModel.js';
import * as VectorBuild from '../src/retrieval/vectors/VectorBuild.js';
import * as Text from '../src/retrieval/Text.js';
import * as Keys from '../src/auth/Keys.js';
import * as Services from '../src/Services.js';
import * as Items from '../src/store/Items.js';
import * as HttpServer from '../src/transport/http/Server.js';
import * as Peek from '../test/support/Peek.js';
import * as SqliteFile from '../test/support/SqliteFile.js';
import * as Tools from '../tools/Tools.js';

const { values } = parseArgs({
  options: {
    size: { type: 'string' },
    engine: { type: 'string' },
    queries: { type: 'string' },
    dir: { type: 'string' },
    reference: { type: 'string' },
    'build-only': { type: 'boolean' },
    vectors: { type: 'boolean' },
  },
});
const n = Number(values.size);
const engine = values.engine ?? 'sqlite';
if (engine !== 'sqlite' && engine !== 'postgres') throw new Error(`--engine is sqlite or postgres, not ${engine}`);
const queryCount = Number(values.queries ?? 200);
const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const scifact = path.join(shared, 'datasets', 'scifact');
const dataset = await Beir.load(scifact, path.join(scifact, 'qrels', 'train.tsv'));
const sentences = dataset.corpus.flatMap((d) => d.text.split(/(?<=[.!?])\s+/)).filter((s) => s.length > 20);
const questions = [...dataset.qrels.keys()].slice(0, queryCount).map((id) => dataset.queries.get(id)!);
const file = path.join(values.dir!, `bench-${n}.db`);
/** The PostgreSQL server the store is made on, and the store's own database there (one per size, kept). */
const postgresServer = process.env.PROFILE_EDGE_BENCH_POSTGRES ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `profile_edge_bench_${n}`;
const postgresUrl = Object.assign(new URL(postgresServer), { pathname: `/${database}` }).href;
const place = engine === 'sqlite' ? { DATABASE_PATH: file } : { DATABASE_URL: postgresUrl };
/**
 * What building the store took, kept with it so a rerun on the cached store still reports it: a file beside the
 * SQLite store, a meta value in the PostgreSQL one (written once the chunks are all in: a database without it is
 * rebuilt).
 */
const sidecar = `${file}.json`;
const builtKey = 'bench_built';
let built: Record<string, number> = engine === 'sqlite' && fs.existsSync(sidecar) ? JSON.parse(fs.readFileSync(sidecar, 'utf8')) : {};
const save = async (store: Services.Services['store']) =>
  engine === 'sqlite' ? fs.writeFileSync(sidecar, JSON.stringify(built)) : store.meta.set(builtKey, JSON.stringify(built));
const log = (line: string) => process.stderr.write(`  [${engine === 'sqlite' ? '' : `${engine} `}${n}] ${line}\n`);
const seconds = (since: number) => Number(((performance.now() - since) / 1000).toFixed(1));
const ms = (values: number[], p: number) => Number(Beir.percentile(values, p).toFixed(1));

let seed = 42;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const open = () => Services.create(Config.load({ ...place, LOG_LEVEL: 'silent', ENVIRONMENT: 'test', QUOTE_RATE_LIMIT_PER_MINUTE: '1000000' }));
const chunkText = () => Array.from({ length: 3 + Math.floor(random() * 5) }, () => sentences[Math.floor(random() * sentences.length)]!).join(' ');

/** Runs `work` on a connection to a PostgreSQL database: by default the server's own, where databases are made. */
async function onServer<T>(work: (peek: Peek.Peek) => Promise<T>, on = postgresServer): Promise<T> {
  const peek = await Peek.open({ DATABASE_URL: on });
  try {
    return await work(peek);
  } finally {
    await peek.close();
  }
}

/** Whether the store is built: its SQLite file exists, or its PostgreSQL database holds a finished build. */
async function isBuilt(): Promise<boolean> {
  if (engine === 'sqlite') return fs.existsSync(file);
  const found = await onServer((peek) => peek.value('SELECT 1 FROM pg_database WHERE datname = ?', database));
  if (found) {
    const services = await open();
    const raw = await services.store.meta.get(builtKey);
    await services.close();
    if (raw !== undefined) {
      built = JSON.parse(raw) as Record<string, number>;
      return true;
    }
    log(`${database} holds an unfinished build: dropped`);
    await onServer((peek) => peek.run(`DROP DATABASE ${database} WITH (FORCE)`));
  }
  await onServer((peek) => peek.run(`CREATE DATABASE ${database}`));
  return false;
}

/** A store of `n` chunks: 50 public profiles with 2 channels each, items of 10 chunks, one transaction per item. */
async function build(): Promise<void> {
  if (await isBuilt()) return;
  const started = performance.now();
  const services = await open();
  const { store } = services;
  const channels: string[] = [];
  for (let p = 0; p < 50; p++) {
    const profile = await store.profiles.create({ slug: `creator-${p}`, name: `Creator ${p}`, visibility: 'public', directory: true });
    for (const kind of ['rss', 'podcast_rss'] as const) channels.push((await store.channels.create({ profileId: profile.id, kind, label: `${kind} ${p}`, accessLevel: 'public', ratePerMillionTokens: 2 })).id);
  }
  const itemsNeeded = Math.ceil(n / 10);
  for (let i = 0; i < itemsNeeded; i++) {
    const doc = dataset.corpus[i % dataset.corpus.length]!;
    const chunks = Array.from({ length: Math.min(10, n - i * 10) }, () => ({ text: chunkText() }));
    await store.items.put(SearchTerms.indexed({ channelId: channels[i % channels.length]!, externalId: `doc-${i}`, title: doc.title, contentHash: `h${i}`, publishedAt: 1_600_000_000_000 + i * 60_000, chunks }));
    if (i % 20_000 === 0) log(`built ${i * 10} / ${n} chunks (${seconds(started)} s)`);
  }
  if (engine === 'sqlite') {
    const { db } = SqliteFile.open(file);
    db.exec("INSERT INTO chunk_fts(chunk_fts) VALUES('optimize')");
    db.close();
  }
  built.ingestSeconds = seconds(started);
  await save(store);
  await services.close();
}

await build();
if (values['build-only']) process.exit(0);

// The reference first: SQLite FTS5's exhaustive BM25, the first stage before the in-memory index. It runs before the
// store is read into the OS cache, since serving never reads FTS5's pages and they would push out the chunks'.
const fts5: number[] = [];
if (engine === 'sqlite') {
  const reference = SqliteFile.open(file).db;
  const fts = reference.prepare('SELECT rowid, -bm25(chunk_fts, 3.0, 1.0, 0.0) AS score FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY score DESC LIMIT 100');
  const quote = (token: string) => `"${token.replace(/"/g, '""')}"`;
  const referenceCount = Math.min(questions.length, Number(values.reference ?? questions.length));
  for (const terms of questions.slice(0, referenceCount).map(Text.queryTerms)) {
    if (terms.length === 0) continue;
    const t = performance.now();
    fts.all(`{title text} : (${terms.map((x) => quote(x.token)).join(' OR ')})`);
    fts5.push(performance.now() - t);
  }
  reference.close();
}

// The store read into the OS cache, as on a server that has been answering for a while: the figures below are then
// this code's, not the disk's (a cold read of a chunk row costs about 0.1 ms here). Read again right before the whole
// queries: some kernels page out file pages unused for a minute (this machine's runs DAMON reclaim, which does), and
// by then the index's load, the term model and the exhaustive pass have taken minutes at 4M. On PostgreSQL,
// pg_prewarm reads every table and index of the store into the OS cache the same way.
async function readStoreAhead(): Promise<void> {
  if (engine === 'sqlite') {
    const handle = fs.openSync(file, 'r');
    const buffer = Buffer.alloc(1 << 24);
    while (fs.readSync(handle, buffer) > 0);
    fs.closeSync(handle);
    return;
  }
  await onServer(async (peek) => {
    // A server that has been answering for a while has had its tables vacuumed and analyzed and its dirty pages
    // written out. Done here first, so autovacuum's pass over a store just built (minutes at 1M chunks) and the
    // checkpoint after it do not share the two cores with the measured questions; quick when there is nothing to do.
    await peek.run('VACUUM (ANALYZE)');
    await peek.run('CHECKPOINT');
    await peek.run('CREATE EXTENSION IF NOT EXISTS pg_prewarm');
    await peek.all("SELECT pg_prewarm(c.oid::regclass, 'read') FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'i', 't')");
  }, postgresUrl).catch((error: unknown) => log(`store not read ahead (pg_prewarm: ${(error as Error).message})`));
}
let started = performance.now();
await readStoreAhead();
const storeReadSeconds = seconds(started);
const services = await open();
/** The store's tables as an auditor reads them, for what only the bench asks (every stem, sizes): SQL written once. */
const peek = await Peek.open(place);

// The index: filled from the chunks when the store predates it, then loaded into memory.
const rssBefore = process.memoryUsage().rss;
started = performance.now();
const index = await services.lexicalIndex();
const indexOpenSeconds = seconds(started);
const indexMB = Math.round((process.memoryUsage().rss - rssBefore) / 1e6);
log(`index open in ${indexOpenSeconds} s: ${JSON.stringify(index.size())}`);
// The first stage uses the threads `serve` would give it (SEARCH_THREADS, by default both cores of this machine).
const searchThreads = await index.threads();

// The term model, read as the first question would read it, or built first as `profile-edge reindex` builds it.
started = performance.now();
let termModelLoadSeconds = (await services.termModel()) ? seconds(started) : undefined;
if (termModelLoadSeconds === undefined) {
  started = performance.now();
  // Every stem the index holds: the term model asks the idf of its vocabulary, which is drawn from them.
  const stems = await peek.column<string>('SELECT term FROM search_terms');
  await TermModel.build(services.store, { stats: await index.statistics(new Set(await peek.column<string>('SELECT id FROM channels')), stems) });
  built.termModelSeconds = seconds(started);
  await save(services.store);
  started = performance.now();
  await services.termModel();
  termModelLoadSeconds = seconds(started);
}

// First stage alone: global scope, top 100.
const channelIds = new Set(await peek.column<string>('SELECT id FROM channels'));
// Each variant in its own pass, so one does not evict the other's working set from the caches.
const queries = questions.map((q) => ({ terms: Text.queryTerms(q), text: q, channelIds, limit: 100 }));
const pruned: number[] = [];
const exhaustive: number[] = [];
const prunedHits = [];
for (const query of queries) {
  const t = performance.now();
  prunedHits.push(await index.search(query));
  pruned.push(performance.now() - t);
}
let identical = 0;
for (const [i, query] of queries.entries()) {
  const t = performance.now();
  const b = await index.searchExhaustive(query);
  exhaustive.push(performance.now() - t);
  const a = prunedHits[i]!;
  if (a.length === b.length && a.every((h, j) => h.rowid === b[j]!.rowid && h.score === b[j]!.score)) identical += 1;
}

// Whole queries: raw mode, global scope, through the handler and over HTTP.
const account = (await services.store.accounts.find('bench')) ?? (await services.store.accounts.create({ name: 'bench' }));
await services.store.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 100 * questions.length * 5 });
const key = (await Keys.issue(services.store, { kind: 'api_key', accountId: account.id })).token;
const args = (question: string) => ({ question, mode: 'raw', paymentMode: 'credits' });
const ask = (q: string) => Tools.invoke({ services, name: 'profile_query', args: args(q), presented: { apiKey: key, origin: 'bench' }, binding: { kind: 'global' } });
await readStoreAhead();
for (const q of questions.slice(0, 10)) await ask(q);
const handler: number[] = [];
for (const q of questions) {
  const t = performance.now();
  await ask(q);
  handler.push(performance.now() - t);
}
const { server, url } = await HttpServer.listen(services, { host: '127.0.0.1', port: 0 });
const http: number[] = [];
for (const q of questions) {
  const t = performance.now();
  const response = await fetch(`${url}/api/ask/query`, { method: 'POST', headers: { 'service-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(args(q)) });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  http.push(performance.now() - t);
}
await HttpServer.close(server);

// A snapshot to start from: written as the keeping instance writes it, read back by a new index as a starting
// instance reads it (it must answer every question as the index built from rows does), and `serve` started on the
// store and timed from spawn to a ready `/ready`, from the snapshot and then from rows.
started = performance.now();
const snapshot = await index.writeSnapshot();
const snapshotWriteSeconds = seconds(started);
log(`snapshot written in ${snapshotWriteSeconds} s: ${Math.round(snapshot.bytes / 1e6)} MB`);
const rssBeforeRestore = process.memoryUsage().rss;
started = performance.now();
let restored: LexicalIndex.LexicalIndex | undefined = await LexicalIndex.open(services.store, { onSnapshotRefused: (reason) => log(`snapshot refused: ${reason}`) });
const snapshotOpenSeconds = seconds(started);
const snapshotIndexMB = Math.round((process.memoryUsage().rss - rssBeforeRestore) / 1e6);
let snapshotIdentical = 0;
// The restored index searches on one thread: its times are the first stage without the search threads.
const prunedOneThread: number[] = [];
for (const [i, query] of queries.entries()) {
  const a = prunedHits[i]!;
  const t = performance.now();
  const b = await restored.search(query);
  prunedOneThread.push(performance.now() - t);
  if (a.length === b.length && a.every((h, j) => h.rowid === b[j]!.rowid && h.score === b[j]!.score)) snapshotIdentical += 1;
}
if (restored.origin().source !== 'snapshot') throw new Error('the index did not start from the snapshot just written');
restored = undefined;
const readyFromSnapshotSeconds = await startToReady({});
await services.store.snapshots.drop('search');
// No snapshot written by this one: it would outlive the measurement.
const readyFromRowsSeconds = await startToReady({ SEARCH_SNAPSHOT_MIN_CHUNKS: String(10 * n) });
await index.writeSnapshot();
log(`serve to a ready /ready: ${readyFromSnapshotSeconds} s from the snapshot, ${readyFromRowsSeconds} s from rows`);

/** Seconds from spawning `profile-edge serve` on the store to its `/ready` answering 200 (the demo dataset left out). */
async function startToReady(extra: Record<string, string>): Promise<number> {
  const begun = performance.now();
  const env = { PATH: process.env.PATH ?? '', ...place, PORT: '0', ENVIRONMENT: 'test', DEMO_DATA: 'false', SYNC_SCHEDULE: 'false', LOG_LEVEL: 'warn', ...extra };
  const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'profile-edge.mjs'), 'serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        const m = /listening on (http:\/\/\S+)/.exec(d.toString());
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`serve exited with ${code} before listening`)));
    });
    while ((await fetch(`${url}/ready`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    return seconds(begun);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

// The same questions with vectors on: a 384-dimension embedder on 127.0.0.1, in a process of its own, that costs next
// to nothing, so what is measured is what vectors cost the query path (embedding over HTTP, the nearest chunks,
// similarity for every candidate).
let vectorFigures: Record<string, number> = {};
if (values.vectors) {
  const embeddings = spawn(process.execPath, [path.join(projectRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(projectRoot, 'bench', 'embedding-stand-in.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) => embeddings.stdout.once('data', (chunk) => resolve(String(chunk).trim())));
  const vectorEnv = { EMBEDDER: 'openai', EMBEDDING_BASE_URL: url, EMBEDDING_MODEL: 'bench-384' };
  const openWithVectors = () => Services.create(Config.load({ ...place, LOG_LEVEL: 'silent', ENVIRONMENT: 'test', QUOTE_RATE_LIMIT_PER_MINUTE: '1000000', ...vectorEnv }));
  let withVectors = await openWithVectors();
  if ((await withVectors.store.vectors.info())?.embedderId !== withVectors.embedder!.id) {
    // Built once and kept in the cached store, as `profile-edge reindex` would; then opened as a server would find it.
    started = performance.now();
    await VectorBuild.build(withVectors.store, withVectors.embedder!, { onProgress: (done, total) => done % 20_000 < 64 && log(`embedded ${done} / ${total}`) });
    built.vectorBuildSeconds = seconds(started);
    await save(withVectors.store);
    await withVectors.close();
    withVectors = await openWithVectors();
  }
  // The sign codes as a starting server reads them (`serve` warms them before the first question).
  started = performance.now();
  await withVectors.vectors!.warm();
  const vectorLoadSeconds = seconds(started);
  // A weight as `profile-edge fit` stores one for an embedder that earned it: unfitted, vectors are skipped entirely.
  await withVectors.store.vectors.setFusion(withVectors.embedder!.id, Fusion.withSimilarity(Reranker.defaultModel, { mean: 0.3, scale: 0.15, weight: 0.5 }));
  await withVectors.lexicalIndex();
  const askWith = (q: string) => Tools.invoke({ services: withVectors, name: 'profile_query', args: args(q), presented: { apiKey: key, origin: 'bench' }, binding: { kind: 'global' } });
  // Lexical alone again, from a service that has not answered these questions: each question is new to both (chunk
  // analyses are cached), and the two alternate question by question so the machine's drift favours neither.
  const lexicalAgain = await open();
  await lexicalAgain.lexicalIndex();
  const askLexically = (q: string) => Tools.invoke({ services: lexicalAgain, name: 'profile_query', args: args(q), presented: { apiKey: key, origin: 'bench' }, binding: { kind: 'global' } });
  // The starts, the snapshot and the indexes above took minutes at 4M: the store's pages are read in again.
  await readStoreAhead();
  for (const q of questions.slice(0, 10)) {
    await askWith(q);
    await askLexically(q);
  }
  const hybrid: number[] = [];
  const lexicalPaired: number[] = [];
  for (const [i, q] of questions.entries()) {
    for (const vectorsOn of i % 2 === 0 ? [false, true] : [true, false]) {
      const t = performance.now();
      await (vectorsOn ? askWith(q) : askLexically(q));
      (vectorsOn ? hybrid : lexicalPaired).push(performance.now() - t);
    }
  }
  await lexicalAgain.close();
  // Where the time goes: the question's embedding, its nearest chunks, similarity for 50 candidates.
  const embed: number[] = [];
  const nearest: number[] = [];
  const similarities: number[] = [];
  for (const [i, q] of questions.entries()) {
    let t = performance.now();
    const vectors = (await withVectors.vectors!.question(q))!;
    embed.push(performance.now() - t);
    t = performance.now();
    await vectors.nearest(channelIds, 20);
    nearest.push(performance.now() - t);
    t = performance.now();
    await vectors.similarities(prunedHits[i]!.slice(0, 50).map((h) => h.rowid));
    similarities.push(performance.now() - t);
  }
  vectorFigures = {
    pairedLexicalP50ms: ms(lexicalPaired, 50),
    hybridHandlerP50ms: ms(hybrid, 50),
    hybridHandlerP95ms: ms(hybrid, 95),
    vectorOverheadP50: Number((Beir.percentile(hybrid, 50) / Beir.percentile(lexicalPaired, 50) - 1).toFixed(3)),
    embedQuestionP50ms: ms(embed, 50),
    nearestP50ms: ms(nearest, 50),
    similaritiesP50ms: ms(similarities, 50),
    vectorBuildSeconds: built.vectorBuildSeconds ?? 0,
    vectorLoadSeconds,
  };
  await withVectors.close();
  embeddings.kill();
}

// Writing: items of 10 chunks, each in its own transaction with the index rows, then searchable at the next query.
const channel = channelIds.values().next().value!;
const writes = 100;
started = performance.now();
for (let i = 0; i < writes; i++) {
  await services.store.items.put(SearchTerms.indexed({ channelId: channel, externalId: `write-${i}`, title: 'Write cost', contentHash: `w${i}`, chunks: Array.from({ length: 10 }, () => ({ text: chunkText() })) }));
}
const writeMsPerChunk = Number(((performance.now() - started) / (writes * 10)).toFixed(3));
started = performance.now();
const found = await index.search({ terms: Text.queryTerms('write cost'), text: 'write cost', channelIds, limit: 10 });
const catchUpMs = Number((performance.now() - started).toFixed(1));
if (!found.length) throw new Error('written chunks were not found');
for (let i = 0; i < writes; i++) await services.store.items.remove(Items.itemId(channel, `write-${i}`));
if (engine === 'sqlite') {
  const { db } = SqliteFile.open(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

/** Payload bytes of a query's rows (pages add a little): this build of SQLite has no dbstat. */
const bytes = async (sql: string) => (await peek.value<number | null>(sql)) ?? 0;
const chunks = (await peek.value<number>('SELECT count(*) FROM chunks'))!;
const perMillion = (total: number) => Number((((total / chunks) * 1e6) / 1e9).toFixed(2));
/** Bytes the store takes: the SQLite file, or the PostgreSQL database's tables, indexes and TOAST. */
const diskBytes = engine === 'sqlite' ? fs.statSync(file).size : (await peek.value<number>('SELECT pg_database_size(current_database())'))!;
const ingestSeconds = built.ingestSeconds ?? null;
console.log(
  JSON.stringify({
    engine,
    chunks,
    queries: questions.length,
    prunedP50ms: ms(pruned, 50),
    prunedP95ms: ms(pruned, 95),
    searchThreads,
    prunedOneThreadP50ms: ms(prunedOneThread, 50),
    prunedOneThreadP95ms: ms(prunedOneThread, 95),
    exhaustiveP50ms: ms(exhaustive, 50),
    fts5P50ms: engine === 'sqlite' ? ms(fts5, 50) : null,
    fts5P95ms: engine === 'sqlite' ? ms(fts5, 95) : null,
    fts5Queries: fts5.length,
    speedupVsFts5: engine === 'sqlite' ? Number((Beir.percentile(fts5, 50) / Beir.percentile(pruned, 50)).toFixed(1)) : null,
    identicalTop100: `${identical}/${questions.length}`,
    handlerP50ms: ms(handler, 50),
    handlerP95ms: ms(handler, 95),
    httpP50ms: ms(http, 50),
    httpP95ms: ms(http, 95),
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1e3),
    indexMB,
    indexOpenSeconds,
    indexOpenFrom: index.origin().source,
    snapshotMB: Math.round(snapshot.bytes / 1e6),
    snapshotWriteSeconds,
    snapshotOpenSeconds,
    snapshotIndexMB,
    snapshotIdenticalTop100: `${snapshotIdentical}/${questions.length}`,
    readyFromSnapshotSeconds,
    readyFromRowsSeconds,
    termModelLoadSeconds,
    storeReadSeconds,
    ingestSeconds,
    ingestChunksPerSecond: ingestSeconds ? Math.round(n / ingestSeconds) : null,
    termModelSeconds: built.termModelSeconds ?? null,
    writeMsPerChunk,
    catchUpMs,
    diskGBPerMillion: perMillion(diskBytes),
    searchRowsGBPerMillion: perMillion((await bytes('SELECT sum(length(terms) + length(channel_id) + 16) FROM search_docs')) + (await bytes('SELECT sum(length(term) + 12) FROM search_terms'))),
    fts5GBPerMillion: engine === 'sqlite' ? perMillion(await bytes('SELECT sum(length(block) + 8) FROM chunk_fts_data')) : null,
    textGBPerMillion: perMillion(await bytes('SELECT sum(length(text) + length(id) + 40) FROM chunks')),
    ...vectorFigures,
  }),
);
await peek.close();
await services.close();
