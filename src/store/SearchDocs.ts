import * as Text from '../retrieval/Text.js';
import type { Statement } from 'better-sqlite3';
import type { Database } from './Database.js';
import { getMeta, setMeta } from './Database.js';

/**
 * The search index's rows, derived from chunks: each chunk's distinct stems with their counts, the title's counting
 * three times (as BM25F weighs a title field), written in the transaction that writes the chunk. Stems are stored as
 * ids into `search_terms`; an id, once given, never changes, so any process may cache them.
 */

/** A chunk as the index reads it. */
export type SearchDoc = { rowid: number; channelId: string; title: string; text: string; length: number };

/** A stored document: its distinct term ids, ascending, with their weighted counts. */
export type StoredDoc = { rowid: number; channelId: string; length: number; terms: Uint8Array };

/** The weight of a title occurrence against one in the text. */
export const titleWeight = 3;
/** Bumped when analysis changes: stored rows are then rebuilt on open. */
const analysisVersion = '1';
const versionKey = 'search_index_version';
/** Counts are stored in 16 bits. */
const maxCount = 65_535;

/**
 * Term ids known to be committed, per connection, and those met inside the write under way: a rolled-back write may
 * have given ids that are gone, so they are trusted only once it commits. Writes nested in a caller's transaction
 * cache nothing, since that transaction may still roll back.
 */
type Cache = { committed: Map<string, number>; pending: Map<string, number> | undefined; select: Statement; insert: Statement; writes: number };
const caches = new WeakMap<Database, Cache>();

function cacheOf(db: Database): Cache {
  let cache = caches.get(db);
  if (!cache) {
    cache = { committed: new Map(), pending: undefined, select: db.prepare('SELECT id FROM search_terms WHERE term = ?').pluck(), insert: db.prepare('INSERT INTO search_terms (term) VALUES (?)'), writes: 0 };
    caches.set(db, cache);
  }
  return cache;
}

/**
 * Runs a write that stores index rows: term ids it gives are cached once it commits. A write already inside a
 * transaction is run as is.
 */
export function writing<T>(db: Database, write: () => T): T {
  if (db.inTransaction) return write();
  const cache = cacheOf(db);
  cache.pending = new Map();
  try {
    const result = write();
    if (cache.committed.size > 500_000) cache.committed.clear();
    for (const [stem, id] of cache.pending) cache.committed.set(stem, id);
    return result;
  } finally {
    cache.pending = undefined;
  }
}

/** The id of each stem, given new ids where needed; call inside a write transaction. */
function idsOf(db: Database, stems: Iterable<string>): Map<string, number> {
  const cache = cacheOf(db);
  const ids = new Map<string, number>();
  for (const stem of stems) {
    let id = cache.committed.get(stem) ?? cache.pending?.get(stem);
    if (id === undefined) {
      id = (cache.select.get(stem) as number | undefined) ?? Number(cache.insert.run(stem).lastInsertRowid);
      cache.pending?.set(stem, id);
    }
    ids.set(stem, id);
  }
  return ids;
}

/** Adds each stem of a text to `counts`, `weight` per occurrence; tokens are counted first, so each is stemmed once. */
function countStems(text: string, weight: number, counts: Map<string, number>): void {
  const tokens = new Map<string, number>();
  for (const token of Text.tokens(text)) tokens.set(token, (tokens.get(token) ?? 0) + 1);
  for (const [token, n] of tokens) {
    const stem = Text.stem(token);
    counts.set(stem, (counts.get(stem) ?? 0) + n * weight);
  }
}

/** Each distinct stem of a chunk and its title with its weighted count. */
export function analyze(title: string, text: string): Map<string, number> {
  const counts = new Map<string, number>();
  countStems(title, titleWeight, counts);
  countStems(text, 1, counts);
  return counts;
}

/** Encodes (id, count) pairs, ascending by id, as varint id deltas each followed by a varint count. */
export function encode(pairs: [number, number][]): Buffer {
  pairs.sort((a, b) => a[0] - b[0]);
  const out = Buffer.allocUnsafe(pairs.length * 8);
  let at = 0;
  const varint = (n: number) => {
    while (n >= 0x80) {
      out[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    out[at++] = n;
  };
  let last = 0;
  for (const [id, count] of pairs) {
    varint(id - last);
    varint(Math.min(count, maxCount));
    last = id;
  }
  return out.subarray(0, at);
}

/** Calls `each(termId, count)` for every pair of an encoded document, ascending by term id. */
export function decode(terms: Uint8Array, each: (termId: number, count: number) => void): void {
  let at = 0;
  let id = 0;
  while (at < terms.length) {
    let delta = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = terms[at++]!;
      delta |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    let count = 0;
    shift = 0;
    do {
      byte = terms[at++]!;
      count |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    id += delta;
    each(id, count);
  }
}

/** Writes the index rows of newly stored chunks. Call inside the transaction that wrote them. */
export function put(db: Database, docs: SearchDoc[]): void {
  if (docs.length === 0) return;
  if (++cacheOf(db).writes % 1000 === 0) trimLog(db);
  const insert = db.prepare('INSERT OR REPLACE INTO search_docs (rowid, channel_id, length, terms) VALUES (?, ?, ?, ?)');
  const titles = new Map<string, Map<string, number>>();
  for (const doc of docs) {
    let title = titles.get(doc.title);
    if (!title) titles.set(doc.title, (title = analyze(doc.title, '')));
    const counts = new Map(title);
    countStems(doc.text, 1, counts);
    const ids = idsOf(db, counts.keys());
    insert.run(doc.rowid, doc.channelId, doc.length, encode([...counts].map(([s, n]) => [ids.get(s)!, n])));
  }
}

/** The id of a stem, or undefined when no chunk ever had it. */
export function termId(db: Database, stem: string): number | undefined {
  return db.prepare('SELECT id FROM search_terms WHERE term = ?').pluck().get(stem) as number | undefined;
}

/**
 * Fills the rows of chunks that have none (a store from before the index, or after an analysis change), in batches
 * of one transaction each, so an interrupted fill resumes where it stopped. Returns how many chunks were added.
 */
export function fill(db: Database, options: { batch?: number; onProgress?: (done: number, total: number) => void } = {}): number {
  if (getMeta(db, versionKey) !== analysisVersion) {
    db.transaction(() => {
      db.exec("DELETE FROM search_docs; DELETE FROM search_log; INSERT INTO search_log (kind) VALUES ('reset');");
      setMeta(db, versionKey, analysisVersion);
    })();
  }
  const missing = () => db.prepare('SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM search_docs d WHERE d.rowid = c.rowid)').pluck().get() as number;
  const total = missing();
  if (total === 0) return 0;
  const batch = options.batch ?? 5_000;
  const next = db.prepare(
    `SELECT c.rowid AS rowid, i.channel_id AS channelId, i.title, c.text, c.token_count AS length
     FROM chunks c JOIN items i ON i.id = c.item_id
     WHERE c.rowid > ? AND NOT EXISTS (SELECT 1 FROM search_docs d WHERE d.rowid = c.rowid) ORDER BY c.rowid LIMIT ?`,
  );
  let after = 0;
  let done = 0;
  for (;;) {
    const rows = next.all(after, batch) as SearchDoc[];
    if (rows.length === 0) break;
    writing(db, () => db.transaction(() => put(db, rows))());
    after = rows[rows.length - 1]!.rowid;
    trimLog(db);
    done += rows.length;
    options.onProgress?.(done, total);
  }
  return done;
}

/** Keeps the last `keep` log entries: an index further behind than that reloads in full. */
export function trimLog(db: Database, keep = 200_000): void {
  db.prepare('DELETE FROM search_log WHERE seq <= (SELECT max(seq) FROM search_log) - ?').run(keep);
}
