import { randomUUID } from 'node:crypto';
import type { Database } from './Database.js';
import { getMeta, setMeta, statement } from './Database.js';
import * as SignCodes from './SignCodes.js';

/*
 * Layout. `chunk_embeddings` holds each chunk's float vector, the record exact similarities are computed from, and the
 * nearest-neighbour scan's sign codes are read from (SignCodes holds them in memory). `chunk_vectors` is a sqlite-vec
 * vec0 table of the same signs with the chunk's channel, numbered by `vector_channels`: sqlite-vec's KNN searched it
 * until the scan in memory replaced it (30 ms against 0.4 at 100k chunks). It is still written, and its definition
 * tells the layouts apart; dropping it awaits a layout change that has another reason to migrate stored indexes.
 * `vector_log` records, by trigger, every chunk whose vector was written or deleted, in order: what a process holding
 * sign codes reads to stay current, whichever process wrote (a rowid SQLite reuses included).
 */

/** Which embedder built the vector index, and its dimension. */
export type IndexInfo = {
  embedderId: string;
  dimensions: number;
  /** Set when the index is created: a process holding an older index's codes in memory sees it was rebuilt. */
  generation?: string;
};

const infoKey = 'vector_index';
/** The most chunks one scan keeps for re-scoring with their floats. */
const maxK = 4096;
/**
 * Rows per vec0 chunk. sqlite-vec picks each chunk's best min(k, chunk size) rows by repeated linear scans, so a scan
 * costs rows × min(k, chunk size): with the hundreds of candidates re-scoring asks for, small chunks keep selection
 * from dominating (measured at 100k: 16, 32 and 64 alike, 256 twice as slow, the default 1,024 three times).
 */
const chunkSize = 64;
/** Candidates scanned per chunk returned, before re-scoring with the floats. */
const defaultOversample = 16;

/** The embedder and dimension of the vector index, or undefined when there is none. */
export function info(db: Database): IndexInfo | undefined {
  const raw = getMeta(db, infoKey);
  if (!raw) return undefined;
  // Read several times a question: parsed again only when another write changed it.
  let read = infosRead.get(db);
  if (read?.raw !== raw) infosRead.set(db, (read = { raw, info: Object.freeze(JSON.parse(raw) as IndexInfo) }));
  return read.info;
}
const infosRead = new WeakMap<Database, { raw: string; info: IndexInfo }>();

const dropAll = `DROP TRIGGER IF EXISTS chunks_vectors_delete; DROP TABLE IF EXISTS chunk_vectors;
  DROP TABLE IF EXISTS chunk_embeddings; DROP TABLE IF EXISTS vector_channels; DROP TABLE IF EXISTS vector_log;`;

/** Drops the vector index: retrieval is lexical only until the next reindex. */
export function drop(db: Database): void {
  db.transaction(() => {
    db.exec(dropAll);
    db.prepare('DELETE FROM meta WHERE key = ?').run(infoKey);
  })();
}

/** Binary quantization packs whole bytes: a dimension count that is not a multiple of 8 is padded with zero bits. */
const codeBits = (dimensions: number) => Math.ceil(dimensions / 8) * 8;

/** The tables that hold the vectors of one index (see Layout), and the trigger that keeps them to live chunks. */
function createTables(db: Database, dimensions: number): void {
  db.exec('CREATE TABLE chunk_embeddings (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL) STRICT');
  db.exec('CREATE TABLE vector_channels (id INTEGER PRIMARY KEY, channel_id TEXT NOT NULL UNIQUE) STRICT');
  db.exec(`CREATE VIRTUAL TABLE chunk_vectors USING vec0(channel integer, code bit[${codeBits(dimensions)}], chunk_size=${chunkSize})`);
  db.exec(`CREATE TRIGGER chunks_vectors_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_vectors WHERE rowid = old.rowid;
    DELETE FROM chunk_embeddings WHERE rowid = old.rowid;
  END;`);
  createLog(db);
}

/** The log of vector writes (see Layout), for an index new or built before it had one. */
function createLog(db: Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk INTEGER NOT NULL) STRICT;
    CREATE TRIGGER IF NOT EXISTS chunk_embeddings_written AFTER INSERT ON chunk_embeddings BEGIN
      INSERT INTO vector_log (chunk) VALUES (new.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS chunk_embeddings_deleted AFTER DELETE ON chunk_embeddings BEGIN
      INSERT INTO vector_log (chunk) VALUES (old.rowid);
    END;`);
}

/**
 * Writes kept in the log: a process further behind than this reads every code anew (about a second at 100k chunks),
 * so the log never grows past a few megabytes.
 */
const logKept = 100_000;

/**
 * Creates an empty vector index for one embedder, replacing any other. Deleting a chunk deletes its vector by trigger,
 * so replaced content never answers from a stale vector.
 */
export function create(db: Database, index: IndexInfo): void {
  if (!Number.isInteger(index.dimensions) || index.dimensions < 1 || index.dimensions > SignCodes.maxDimensions) throw new Error(`bad vector dimension ${index.dimensions}`);
  db.transaction(() => {
    db.exec(dropAll);
    createTables(db, index.dimensions);
    setMeta(db, infoKey, JSON.stringify({ ...index, generation: randomUUID() }));
  })();
}

const blob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
/** The zero vector has no direction: cosine similarity is undefined for it, so it is kept out. */
const directionless = (v: Float32Array) => v.every((x) => x === 0);

/** A vector's signs, one bit a dimension (1 where positive), as `vec_quantize_binary` packs them. */
function signs(v: Float32Array): Buffer {
  const out = Buffer.alloc(codeBits(v.length) / 8);
  for (let i = 0; i < v.length; i++) if (v[i]! > 0) out[i >> 3]! |= 1 << (i & 7);
  return out;
}

/** Records that a rebuild finished: until then the index names an embedder no configuration matches. */
export function markBuilt(db: Database, embedderId: string): void {
  const current = info(db);
  if (current) setMeta(db, infoKey, JSON.stringify({ ...current, embedderId }));
}

/** The id a rebuild in progress carries, so a half-built index is never searched. */
export const building = (embedderId: string): string => `${embedderId} (building)`;

/** Which layout the stored index has: `floats` is the one before quantization (a vec0 table of floats alone). */
function layout(db: Database): 'none' | 'floats' | 'signs' {
  const sql = statement(db, "SELECT sql FROM sqlite_master WHERE name = 'chunk_vectors'").pluck().get() as string | undefined;
  if (!sql) return 'none';
  return /\bbit\[/i.test(sql) ? 'signs' : 'floats';
}

/** Writes chunks' vectors, floats and signs, each with the channel its chunk belongs to. */
function writer(db: Database) {
  const channelOf = db.prepare('SELECT i.channel_id FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid = ?').pluck();
  const addChannel = db.prepare('INSERT INTO vector_channels (channel_id) VALUES (?) ON CONFLICT (channel_id) DO NOTHING');
  const channelNumber = db.prepare('SELECT id FROM vector_channels WHERE channel_id = ?').pluck();
  const insertEmbedding = db.prepare('INSERT INTO chunk_embeddings (rowid, embedding) VALUES (?, ?)');
  // vec0 takes only integer rowids and metadata; better-sqlite3 binds a JS number as REAL, a BigInt as INTEGER.
  const insertCode = db.prepare('INSERT INTO chunk_vectors (rowid, channel, code) VALUES (?, ?, vec_bit(?))');
  const numbers = new Map<string, bigint>();
  return (rowid: number, vector: Float32Array) => {
    const channelId = channelOf.get(rowid) as string | undefined;
    if (channelId === undefined) throw new Error(`no chunk ${rowid} to index`);
    let channel = numbers.get(channelId);
    if (channel === undefined) {
      addChannel.run(channelId);
      channel = BigInt(channelNumber.get(channelId) as number);
      numbers.set(channelId, channel);
    }
    insertEmbedding.run(rowid, blob(vector));
    insertCode.run(BigInt(rowid), channel, signs(vector));
  };
}

/** Connections that have seen the vector log in place: an index created since has one too. */
const logged = new WeakSet<Database>();

/**
 * Brings an index built before quantization (a vec0 table of floats alone) to the current layout from its stored
 * floats, so nothing is embedded again. Runs once, in one transaction; returns how many vectors it carried over.
 */
export function upgrade(db: Database): number {
  const current = info(db);
  if (!current) return 0;
  const stored = layout(db);
  if (stored === 'signs' && !logged.has(db)) {
    if (!statement(db, "SELECT 1 FROM sqlite_master WHERE name = 'vector_log'").get()) db.transaction(() => createLog(db)).immediate();
    logged.add(db);
  }
  if (stored !== 'floats') return 0;
  return db.transaction(() => {
    // Another connection may have finished it while this one waited for the write lock.
    if (layout(db) !== 'floats') return 0;
    db.exec('DROP TABLE IF EXISTS vector_upgrade');
    db.exec('CREATE TEMP TABLE vector_upgrade (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)');
    // vec0 cannot be renamed or altered in 0.1.9: the floats wait in a temporary table while it is made anew.
    db.exec('INSERT INTO vector_upgrade (rowid, embedding) SELECT v.rowid, v.embedding FROM chunk_vectors v JOIN chunks c ON c.rowid = v.rowid');
    db.exec(dropAll);
    createTables(db, current.dimensions);
    const write = writer(db);
    const page = db.prepare('SELECT rowid, embedding FROM vector_upgrade WHERE rowid > ? ORDER BY rowid LIMIT 1024');
    let after = 0;
    let carried = 0;
    for (;;) {
      const rows = page.all(after) as { rowid: number; embedding: Buffer }[];
      if (rows.length === 0) break;
      for (const row of rows) {
        const vector = new Float32Array(row.embedding.buffer.slice(row.embedding.byteOffset, row.embedding.byteOffset + row.embedding.byteLength));
        if (vector.length !== current.dimensions || directionless(vector)) continue;
        write(row.rowid, vector);
        carried++;
      }
      after = rows.at(-1)!.rowid;
    }
    db.exec('DROP TABLE vector_upgrade');
    return carried;
  }).immediate();
}

/**
 * Stores vectors for chunks (by rowid), replacing any they had; a chunk whose vector is zero keeps none. Call inside
 * the transaction that wrote the chunks: a vector is filed under its chunk's channel, read from the chunk.
 */
export function put(db: Database, rows: { rowid: number; vector: Float32Array }[]): void {
  const current = info(db);
  if (!current || rows.length === 0) return;
  upgrade(db);
  const removeCode = db.prepare('DELETE FROM chunk_vectors WHERE rowid = ?');
  const removeEmbedding = db.prepare('DELETE FROM chunk_embeddings WHERE rowid = ?');
  const write = writer(db);
  for (const row of rows) {
    if (row.vector.length !== current.dimensions) throw new Error(`vector of ${row.vector.length} dimensions for an index of ${current.dimensions}`);
    removeCode.run(BigInt(row.rowid));
    removeEmbedding.run(row.rowid);
    if (!directionless(row.vector)) write(row.rowid, row.vector);
  }
  statement(db, 'DELETE FROM vector_log WHERE seq <= (SELECT max(seq) FROM vector_log) - ?').run(logKept);
}

/** A nearest-neighbour question to the index. */
export type NearestQuery = {
  vector: Float32Array;
  /** How many chunks to return at most. */
  limit: number;
  /** The channels chunks may come from: the scan is constrained to them, so no other chunk is found or counted. */
  channelIds: Iterable<string>;
  /** Candidates scanned by their signs per chunk returned, before exact re-scoring; 16 unless given. */
  oversample?: number | undefined;
};

/**
 * Every stored vector's signs, held in memory per open database for the nearest-neighbour scan (see SignCodes).
 * sqlite-vec's own KNN over the same codes took 30 ms at 100k chunks (its per-chunk selection and metadata filter), a
 * scan of these 0.4. Before each scan the vector log since the last is read, so vectors written or deleted by any
 * process are held as they are now; a rebuilt index (a new generation) or a log pruned past this process is read anew
 * (synchronously, as the lexical index reloads: about a second a 100k chunks), and codes of which a fifth are dead are
 * compacted in memory.
 */
type Held = {
  key: string;
  /** The last vector log entry applied. */
  seq: number;
  codes: SignCodes.SignCodes;
};
const held = new WeakMap<Database, Held>();

type CodeRow = { rowid: number; embedding: Buffer | null; channel: string | null };

/** Holds a stored vector's code, or forgets the chunk's when it has none (deleted, or of another dimension). */
function apply(codes: SignCodes.SignCodes, row: CodeRow): void {
  const bytes = row.embedding;
  if (!bytes || row.channel === null || bytes.byteLength !== codes.dimensions * 4) return codes.remove(row.rowid);
  // A view needs 4-byte alignment, which a pooled Buffer need not have: then a copy.
  const vector = bytes.byteOffset % 4 === 0 ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) : new Float32Array(Uint8Array.from(bytes).buffer);
  codes.put(row.rowid, row.channel, vector);
}

/** Every stored vector's code, with the log position they are current to: one read transaction, so the two agree. */
function load(db: Database, index: IndexInfo, key: string): Held {
  const page = statement(
    db,
    `SELECT e.rowid AS rowid, e.embedding AS embedding, i.channel_id AS channel FROM chunk_embeddings e
     JOIN chunks c ON c.rowid = e.rowid JOIN items i ON i.id = c.item_id WHERE e.rowid > ? ORDER BY e.rowid LIMIT 8192`,
  );
  return db.transaction(() => {
    const c: Held = { key, seq: (statement(db, 'SELECT max(seq) FROM vector_log').pluck().get() as number | null) ?? 0, codes: SignCodes.create(index.dimensions) };
    for (let after = 0; ; ) {
      const rows = page.all(after) as CodeRow[];
      if (rows.length === 0) break;
      for (const row of rows) apply(c.codes, row);
      after = rows.at(-1)!.rowid;
    }
    return c;
  })();
}

/**
 * The codes of the stored index, current to the last write: read anew, or brought up to date from the log. Call in a
 * read transaction, which then holds them to the snapshot the caller reads the floats from.
 */
function codesOf(db: Database, index: IndexInfo): SignCodes.SignCodes {
  const key = `${index.generation ?? ''}|${index.embedderId}|${index.dimensions}`;
  const c = held.get(db);
  if (!c || c.key !== key) return fresh(db, index, key);
  if (c.codes.dead > Math.max(1024, c.codes.size / 4)) c.codes.compact();
  // Inside the caller's read transaction: the log cannot be pruned between looking at its start and reading it.
  const first = statement(db, 'SELECT min(seq) FROM vector_log').pluck().get() as number | null;
  if (first !== null && first > c.seq + 1) return fresh(db, index, key);
  follow(db, c);
  return c.codes;
}

function fresh(db: Database, index: IndexInfo, key: string): SignCodes.SignCodes {
  const c = load(db, index, key);
  held.set(db, c);
  return c.codes;
}

/** Applies the log since the codes were last current. */
function follow(db: Database, c: Held): void {
  const since = statement(
    db,
    `SELECT l.seq AS seq, l.chunk AS rowid, e.embedding AS embedding, i.channel_id AS channel FROM vector_log l
     LEFT JOIN chunk_embeddings e ON e.rowid = l.chunk LEFT JOIN chunks c ON c.rowid = e.rowid LEFT JOIN items i ON i.id = c.item_id
     WHERE l.seq > ? ORDER BY l.seq LIMIT 8192`,
  );
  for (;;) {
    const rows = since.all(c.seq) as (CodeRow & { seq: number })[];
    if (rows.length === 0) break;
    for (const row of rows) apply(c.codes, row);
    c.seq = rows.at(-1)!.seq;
  }
}

/** Reads the index's codes into memory now, so the first question after a start does not wait for them. */
export function warm(db: Database): number {
  const index = info(db);
  if (!index) return 0;
  upgrade(db);
  return layout(db) === 'signs' ? db.transaction(() => codesOf(db, index).size)() : 0;
}

/**
 * The chunks nearest a vector within the given channels, best first, with their exact cosine similarity; ties go to
 * the earlier chunk. The scan compares signs (Hamming distance) over the scope's chunks only and keeps the
 * `limit × oversample` nearest (of the last distance's chunks, those held first), which are re-scored with the stored
 * floats. None for the zero vector.
 */
export function nearest(db: Database, query: NearestQuery): { rowid: number; similarity: number }[] {
  const index = info(db);
  if (!index || directionless(query.vector) || query.limit < 1) return [];
  upgrade(db);
  const wanted = Math.min(maxK, Math.max(query.limit, Math.ceil(query.limit * (query.oversample ?? defaultOversample))));
  const scope = new Set(query.channelIds);
  // One read transaction: the codes are brought to the snapshot the floats are read from, so the channel each is held
  // under is its chunk's (items never change channel), and a chunk deleted since is neither scanned nor re-scored.
  const scored = db.transaction(() => {
    const candidates = codesOf(db, index).nearest(query.vector, scope, wanted);
    return candidates.length === 0 ? [] : cosineDistances(db, query.vector, candidates);
  })();
  return scored
    .map((r) => ({ rowid: r.rowid, similarity: 1 - r.distance }))
    .sort((a, b) => b.similarity - a.similarity || a.rowid - b.rowid)
    .slice(0, query.limit);
}

const cosineDistances = (db: Database, vector: Float32Array, rowids: number[]) =>
  statement(db, 'SELECT e.rowid AS rowid, vec_distance_cosine(e.embedding, ?) AS distance FROM json_each(?) j JOIN chunk_embeddings e ON e.rowid = j.value').all(
    blob(vector),
    JSON.stringify(rowids),
  ) as { rowid: number; distance: number }[];

/** How many chunks have a vector. */
export function count(db: Database): number {
  const stored = layout(db);
  if (!info(db) || stored === 'none') return 0;
  return db.prepare(`SELECT count(*) FROM ${stored === 'floats' ? 'chunk_vectors' : 'chunk_embeddings'}`).pluck().get() as number;
}

/**
 * The exact cosine similarity of each given chunk to a vector, from the stored floats; a chunk without a vector is
 * left out. What reranking reads for every candidate, wherever it was found.
 */
export function similarities(db: Database, vector: Float32Array, rowids: number[]): Map<number, number> {
  if (rowids.length === 0 || !info(db) || directionless(vector) || layout(db) !== 'signs') return new Map();
  return new Map(cosineDistances(db, vector, rowids).map((r) => [r.rowid, 1 - r.distance]));
}

const fusionKey = 'vector_fusion';

/** How vector similarity joins reranking for one embedder, as `profile-edge fit` measured it (see Fusion). */
export type StoredFusion = { embedderId: string; fusion: unknown };

/** The fusion fitted for an embedder, or undefined when none was (or one was for another embedder). */
export function fusion(db: Database, embedderId: string): unknown {
  const raw = getMeta(db, fusionKey);
  if (!raw) return undefined;
  // Read at every question: the same text gives the same object, so a caller can keep what it derived from it.
  let read = fusionsRead.get(db);
  if (read?.raw !== raw) fusionsRead.set(db, (read = { raw, stored: JSON.parse(raw) as StoredFusion }));
  return read.stored.embedderId === embedderId ? read.stored.fusion : undefined;
}
const fusionsRead = new WeakMap<Database, { raw: string; stored: StoredFusion }>();

/** Stores the fusion fitted for an embedder beside its vector index, replacing any other. */
export function setFusion(db: Database, embedderId: string, fitted: unknown): void {
  setMeta(db, fusionKey, JSON.stringify({ embedderId, fusion: fitted } satisfies StoredFusion));
}
