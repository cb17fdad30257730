/**
 * Query latency benchmark: raw-mode profile_query over global scope, through the tool handler and over HTTP, on
 * synthetic stores of 10k, 100k and 1M chunks made from SciFact sentences. Stores are cached between runs.
 *
 *   npm run bench -- [--sizes 10000,100000,1000000] [--queries 200]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as Config from '../src/config/Config.js';
import { projectRoot } from '../src/config/Config.js';
import * as Beir from '../src/eval/Beir.js';
import * as Services from '../src/Services.js';
import * as Accounts from '../src/store/Accounts.js';
import * as Channels from '../src/store/Channels.js';
import * as Credentials from '../src/store/Credentials.js';
import * as Items from '../src/store/Items.js';
import * as Ledger from '../src/store/Ledger.js';
import * as Profiles from '../src/store/Profiles.js';
import * as TermModel from '../src/retrieval/TermModel.js';
import * as HttpServer from '../src/transport/http/Server.js';
import * as Tools from '../tools/Tools.js';

const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const { values } = parseArgs({ options: { sizes: { type: 'string' }, queries: { type: 'string' }, dir: { type: 'string' } } });
const sizes = (values.sizes ?? '10000,100000,1000000').split(',').map(Number);
const queryCount = Number(values.queries ?? 200);
const cache = values.dir ?? path.join(os.tmpdir(), 'profile-edge-bench');
fs.mkdirSync(cache, { recursive: true });

const scifact = path.join(shared, 'datasets', 'scifact');
const dataset = await Beir.load(scifact, path.join(scifact, 'qrels', 'train.tsv'));
const sentences = dataset.corpus.flatMap((d) => d.text.split(/(?<=[.!?])\s+/)).filter((s) => s.length > 20);
const questions = [...dataset.qrels.keys()].slice(0, queryCount).map((id) => dataset.queries.get(id)!);

let seed = 42;
const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);

/** Builds (or reuses) a store of `n` chunks: 50 public profiles, 2 channels each, items of 10 chunks. */
function build(n: number, file: string): void {
  if (fs.existsSync(file)) return;
  const services = Services.create(Config.load({ DATABASE_PATH: file, LOG_LEVEL: 'silent', ENVIRONMENT: 'test' }));
  const db = services.db;
  const channels: string[] = [];
  for (let p = 0; p < 50; p++) {
    const profile = Profiles.create(db, { slug: `creator-${p}`, name: `Creator ${p}`, visibility: 'public', directory: true });
    for (const kind of ['rss', 'podcast_rss'] as const) {
      channels.push(Channels.create(db, { profileId: profile.id, kind, label: `${kind} ${p}`, accessLevel: 'public', ratePerMillionTokens: 2 }).id);
    }
  }
  const started = performance.now();
  const itemsNeeded = Math.ceil(n / 10);
  for (let start = 0; start < itemsNeeded; start += 1000) {
    db.transaction(() => {
      for (let i = start; i < Math.min(itemsNeeded, start + 1000); i++) {
        const doc = dataset.corpus[i % dataset.corpus.length]!;
        const chunks = Array.from({ length: Math.min(10, n - i * 10) }, () => ({
          text: Array.from({ length: 3 + Math.floor(random() * 5) }, () => sentences[Math.floor(random() * sentences.length)]!).join(' '),
        }));
        Items.put(db, { channelId: channels[i % channels.length]!, externalId: `doc-${i}`, title: doc.title, contentHash: `h${i}`, publishedAt: 1_600_000_000_000 + i * 60_000, chunks });
      }
    })();
    if (start % 20_000 === 0) process.stderr.write(`  built ${Math.min(itemsNeeded, start + 1000) * 10} / ${n} chunks (${((performance.now() - started) / 1000).toFixed(0)} s)\n`);
  }
  db.exec("INSERT INTO chunk_fts(chunk_fts) VALUES('optimize')");
  services.close();
}

/** The production default ranks with the corpus term model: build it as `profile-edge reindex` would. */
function ensureTermModel(file: string): void {
  const services = Services.create(Config.load({ DATABASE_PATH: file, LOG_LEVEL: 'silent', ENVIRONMENT: 'test' }));
  if (!services.termModel()) {
    const started = performance.now();
    const info = TermModel.build(services.db, { onProgress: (stage) => process.stderr.write(`  term model: ${stage}\n`) });
    process.stderr.write(`  term model: ${info.terms} terms from ${info.chunks} chunks in ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  }
  services.close();
}

const report: Record<string, unknown>[] = [];
for (const n of sizes) {
  const file = path.join(cache, `bench-${n}.db`);
  process.stderr.write(`store of ${n} chunks: ${file}\n`);
  build(n, file);
  ensureTermModel(file);
  const services = Services.create(Config.load({ DATABASE_PATH: file, LOG_LEVEL: 'silent', ENVIRONMENT: 'test', QUOTE_RATE_LIMIT_PER_MINUTE: '1000000' }));
  const account = Accounts.find(services.db, 'bench') ?? Accounts.create(services.db, { name: 'bench' });
  Ledger.move(services.db, { accountId: account.id, kind: 'grant', creditsDelta: 100 * questions.length * 2 });
  const key = Credentials.issue(services.db, { kind: 'api_key', accountId: account.id }).token;
  const chunks = services.db.prepare('SELECT count(*) FROM chunks').pluck().get() as number;
  const args = (question: string) => ({ question, mode: 'raw', paymentMode: 'credits' });

  // Warm the page cache and statistics the way a running server would be.
  for (const q of questions.slice(0, 10)) await Tools.invoke({ services, name: 'profile_query', args: args(q), presented: { apiKey: key, origin: 'bench' }, binding: { kind: 'global' } });
  const handler: number[] = [];
  for (const q of questions) {
    const t = performance.now();
    await Tools.invoke({ services, name: 'profile_query', args: args(q), presented: { apiKey: key, origin: 'bench' }, binding: { kind: 'global' } });
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
  services.close();
  const row = {
    chunks,
    queries: questions.length,
    handlerP50ms: Number(Beir.percentile(handler, 50).toFixed(1)),
    handlerP95ms: Number(Beir.percentile(handler, 95).toFixed(1)),
    httpP50ms: Number(Beir.percentile(http, 50).toFixed(1)),
    httpP95ms: Number(Beir.percentile(http, 95).toFixed(1)),
    rssMB: Math.round(process.memoryUsage().rss / 1e6),
  };
  report.push(row);
  console.log(JSON.stringify(row));
}
console.table(report);
