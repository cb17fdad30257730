import * as SearchDocs from '../store/SearchDocs.js';
import type { LogEntry, StoredDoc } from '../store/SearchDocs.js';
import type { Store } from '../store/Store.js';
import * as Audiences from './Audiences.js';
import * as MaxScore from './MaxScore.js';
import { PostingList } from './Postings.js';
import type { SearchHit, SearchIndex, SearchQuery } from './SearchIndex.js';
import * as SearchTerms from './SearchTerms.js';
import * as Stats from './Stats.js';

/**
 * The lexical first stage: an in-memory inverted index over every chunk, searched by MaxScore for the exact BM25 top k
 * (k1 1.2, b 0.75, title x3). It is built from `search_docs` and caught up from `search_log` before every search, so
 * a chunk written by any process is found (or gone) at once, and a restart rebuilds it from what was committed.
 *
 * Counts are kept per audience (`Audiences`): a scope's statistics sum the public audience and the private profiles
 * in the scope, so what a caller is shown never depends on content the caller cannot read.
 */
export type LexicalIndex = SearchIndex & {
  /**
   * Collection statistics over the content the given channels' readers may read, current to the last write; document
   * frequencies are known for `stems` (a question's), and any stem asked before.
   */
  statistics(channelIds: ReadonlySet<string>, stems: Iterable<string>): Promise<Stats.Stats>;
  /** The same ranking, scoring every matching chunk: the reference the pruned search equals. */
  searchExhaustive(query: SearchQuery): Promise<SearchHit[]>;
  /** What the index holds, for benchmarks and diagnostics. */
  size(): { chunks: number; terms: number; postings: number };
};

const k1 = 1.2;
const b = 0.75;
/** A full rebuild drops the postings of removed chunks once they are this share of the index. */
const compactShare = 0.25;

/**
 * Per audience: chunks, their tokens, and in how many of them each term occurs (by term id: a dense array for the
 * public audience, which holds most terms, a map for a private profile's).
 */
type Counts = { chunks: number; tokens: number; df: Int32Array | Map<number, number> };

const dfOf = (c: Counts, termId: number): number => (c.df instanceof Map ? c.df.get(termId) ?? 0 : c.df[termId] ?? 0);

function addDf(c: Counts, termId: number, delta: number): void {
  if (c.df instanceof Map) {
    const n = (c.df.get(termId) ?? 0) + delta;
    if (n > 0) c.df.set(termId, n);
    else c.df.delete(termId);
    return;
  }
  if (termId >= c.df.length) {
    const grown = new Int32Array(Math.max(termId + 1, c.df.length * 2));
    grown.set(c.df);
    c.df = grown;
  }
  c.df[termId]! += delta;
}

/** Rows read from the store at a time. */
const pageSize = 8192;

/** Opens the index over a store: fills rows missing from `search_docs`, then loads them. */
export async function open(
  store: Store,
  options: { onProgress?: (stage: string) => void; /** Documents MaxScore takes at a time (tests use small blocks). */ blockSize?: number } = {},
): Promise<LexicalIndex> {
  const filled = await SearchTerms.fill(store, { onProgress: (done, total) => options.onProgress?.(`indexed ${done} of ${total} chunks`) });
  if (filled > 0) options.onProgress?.(`indexed ${filled} chunks`);
  const termIds = new Map<string, number>();

  // Documents are numbered in the order they arrive; posting lists are ascending in that number.
  let rowids = new Int32Array(1024);
  let lengths = new Int32Array(1024);
  let channelOfDoc = new Int32Array(1024);
  let deleted = new Uint8Array(1024);
  let docCount = 0;
  let deletedCount = 0;
  /** Chunk rowid to document number + 1 (0: not indexed). */
  let docOf = new Int32Array(1024);
  let postings: (PostingList | undefined)[] = [];
  let postingCount = 0;
  const channelIndex = new Map<string, number>();
  /** Each channel's audience number, -1 for none (paused). */
  let channelAudience: number[] = [];
  const audienceIndex = new Map<string, number>([[Audiences.publicAudience, 0]]);
  let counts: Counts[] = [];
  let applied = 0;
  /** Moves whenever what the index holds changes: statistics are cached until it does. */
  let version = 0;
  const statsCache = new Map<string, { version: number; stats: Stats.Stats }>();
  let scratch = MaxScore.scratch(1024);
  /** Documents whose lengths are in `scratch.cells`. */
  let scratchFilled = 0;
  const ensureScratch = () => {
    if (scratch.mark.length < docCount) {
      scratch = MaxScore.scratch(Math.ceil(docCount * 1.25));
      scratchFilled = 0;
    }
    for (; scratchFilled < docCount; scratchFilled++) scratch.cells[2 * scratchFilled + 1] = lengths[scratchFilled]!;
  };

  const grow = <T extends Int32Array | Uint8Array>(array: T, need: number): T => {
    if (need <= array.length) return array;
    const next = new (array.constructor as new (n: number) => T)(Math.max(need, array.length * 2));
    next.set(array);
    return next;
  };

  const audienceNumber = (audience: Audiences.Audience): number => {
    if (audience === null) return -1;
    let n = audienceIndex.get(audience);
    if (n === undefined) {
      n = audienceIndex.size;
      audienceIndex.set(audience, n);
    }
    return n;
  };

  const countsOf = (audience: number): Counts => {
    while (counts.length <= audience) counts.push({ chunks: 0, tokens: 0, df: counts.length === 0 ? new Int32Array(1024) : new Map() });
    return counts[audience]!;
  };

  /** Every channel's audience, as last read from the store. */
  let audiences = new Map<string, Audiences.Audience>();
  /** Takes in every channel's audience as last read; true when one holding documents moved. */
  const takeAudiences = (): boolean => {
    let moved = false;
    for (const [channelId, audience] of audiences) {
      let index = channelIndex.get(channelId);
      if (index === undefined) {
        index = channelIndex.size;
        channelIndex.set(channelId, index);
        channelAudience.push(-1);
      }
      const number = audienceNumber(audience);
      if (channelAudience[index] !== number) {
        channelAudience[index] = number;
        moved = true;
      }
    }
    return moved;
  };

  /** Counts every live document again, by audience: after channels change audience. */
  const recount = () => {
    counts = [];
    for (let doc = 0; doc < docCount; doc++) {
      if (deleted[doc]) continue;
      const audience = channelAudience[channelOfDoc[doc]!]!;
      if (audience < 0) continue;
      const c = countsOf(audience);
      c.chunks += 1;
      c.tokens += lengths[doc]!;
    }
    postings.forEach((list, termId) => {
      if (!list) return;
      for (let p = 0; p < list.length; p++) {
        const doc = list.docs[p]!;
        if (deleted[doc]) continue;
        const audience = channelAudience[channelOfDoc[doc]!]!;
        if (audience >= 0) addDf(countsOf(audience), termId, 1);
      }
    });
  };

  const channelNumber = (channelId: string): number => {
    let index = channelIndex.get(channelId);
    if (index === undefined) {
      // A channel deleted since its chunk was written: its chunks are on their way out and answer nobody.
      index = channelIndex.size;
      channelIndex.set(channelId, index);
      channelAudience.push(-1);
    }
    return index;
  };

  const add = (rowid: number, channelId: string, length: number, terms: Uint8Array) => {
    if (rowid < docOf.length && docOf[rowid]! > 0) remove(rowid, undefined);
    const doc = docCount++;
    rowids = grow(rowids, docCount);
    lengths = grow(lengths, docCount);
    channelOfDoc = grow(channelOfDoc, docCount);
    deleted = grow(deleted, docCount);
    docOf = grow(docOf, rowid + 1);
    rowids[doc] = rowid;
    lengths[doc] = length;
    const channel = channelNumber(channelId);
    channelOfDoc[doc] = channel;
    docOf[rowid] = doc + 1;
    const audience = channelAudience[channel]!;
    const c = audience >= 0 ? countsOf(audience) : undefined;
    if (c) {
      c.chunks += 1;
      c.tokens += length;
    }
    SearchDocs.decode(terms, (termId, count) => {
      let list = postings[termId];
      if (!list) postings[termId] = list = new PostingList();
      list.push(doc, count);
      postingCount += 1;
      if (c) addDf(c, termId, 1);
    });
  };

  /** Marks a chunk's document removed; `terms` (what it held) takes it out of the counts. */
  const remove = (rowid: number, terms: Uint8Array | undefined) => {
    const doc = rowid < docOf.length ? docOf[rowid]! - 1 : -1;
    if (doc < 0) return;
    docOf[rowid] = 0;
    deleted[doc] = 1;
    deletedCount += 1;
    const audience = channelAudience[channelOfDoc[doc]!]!;
    if (audience < 0) return;
    const c = countsOf(audience);
    c.chunks -= 1;
    c.tokens -= lengths[doc]!;
    if (terms) {
      SearchDocs.decode(terms, (termId) => addDf(c, termId, -1));
    } else {
      // Replaced in place without its old terms at hand: count again from the postings.
      pendingRecount = true;
    }
  };
  let pendingRecount = false;

  /**
   * Builds everything from `search_docs` in two passes over the rows: count each term's postings, then fill lists
   * allocated to size. The log position is read first: a write that lands while the rows are read is in them or after
   * that position, and applying it again is harmless (`add` replaces, `remove` of what is gone does nothing).
   */
  const load = async () => {
    const start = (await store.search.logBounds()).last ?? 0;
    audiences = await Audiences.read(store);
    const rows: StoredDoc[] = [];
    for (let after = 0; ; ) {
      const page = await store.search.page(after, pageSize);
      if (page.length === 0) break;
      for (const row of page) rows.push(row);
      after = page.at(-1)!.rowid;
    }
    // From here on nothing awaits: a search meanwhile sees the old index or the new one, whole.
    applied = start;
    docCount = 0;
    deletedCount = 0;
    postingCount = 0;
    counts = [];
    channelIndex.clear();
    channelAudience = [];
    // Documents are numbered afresh: the lengths beside the scores are filled again before the next search.
    scratchFilled = 0;
    takeAudiences();
    const size = Math.max(1024, rows.length);
    rowids = new Int32Array(size);
    lengths = new Int32Array(size);
    channelOfDoc = new Int32Array(size);
    deleted = new Uint8Array(size);
    docOf = new Int32Array(Math.max(1024, (rows.at(-1)?.rowid ?? 0) + 1));
    let listSizes = new Int32Array(1024);
    for (const row of rows) {
      const doc = docCount++;
      rowids[doc] = row.rowid;
      lengths[doc] = row.length;
      docOf[row.rowid] = doc + 1;
      const channel = channelNumber(row.channelId);
      channelOfDoc[doc] = channel;
      const audience = channelAudience[channel]!;
      const c = audience >= 0 ? countsOf(audience) : undefined;
      if (c) {
        c.chunks += 1;
        c.tokens += row.length;
      }
      SearchDocs.decode(row.terms, (termId) => {
        if (termId >= listSizes.length) listSizes = grow(listSizes, termId + 1);
        listSizes[termId]! += 1;
        if (c) addDf(c, termId, 1);
      });
    }
    // An eighth to spare: a list allocated to size would be copied whole by the first chunk written after load.
    postings = Array.from(listSizes, (n) => (n > 0 ? new PostingList(n + (n >> 3) + 4) : undefined));
    rows.forEach((row, doc) =>
      SearchDocs.decode(row.terms, (termId, count) => {
        const list = postings[termId]!;
        list.docs[list.length] = doc;
        list.counts[list.length] = count;
        list.length += 1;
      }),
    );
    postingCount = listSizes.reduce((n, x) => n + x, 0);
    // Each list's bound for the public average length, so the first questions after a start do not pay a pass over
    // every long list they name (seconds at millions of chunks).
    const everyone = counts[0];
    if (everyone && everyone.chunks > 0) {
      const scoring = { k1, b, averageLength: everyone.tokens / everyone.chunks, docLength: lengths };
      for (const list of postings) list?.bound(scoring);
    }
    version += 1;
  };

  /** Reads what other writes logged since the last look, then applies it at once: one cheap query when nothing changed. */
  const readChanges = async (): Promise<{ entries: LogEntry[]; audiences?: Map<string, Audiences.Audience> } | 'reload' | undefined> => {
    const { first, last } = await store.search.logBounds();
    if ((last ?? 0) === applied) return undefined;
    if (last === null || last < applied || first === null || first > applied + 1) return 'reload';
    const entries: LogEntry[] = [];
    for (let after = applied; ; ) {
      const page = await store.search.changes(after, pageSize);
      if (page.length === 0) break;
      for (const entry of page) {
        if (entry.kind === 'reset') return 'reload';
        entries.push(entry);
      }
      after = page.at(-1)!.seq;
    }
    return entries.some((e) => e.kind === 'audiences') ? { entries, audiences: await Audiences.read(store) } : { entries };
  };

  /**
   * One catch-up at a time, stamped with when it began reading the log: it answers every search asked before that
   * moment (what was committed before the question is in what it read), so a question reads the log once for its
   * statistics and all its searches; a search asked later waits for it, then reads the log again.
   */
  let readSince = -Infinity;
  let catching: { from: number; done: Promise<void> } | undefined;
  const catchUp = async (asOf: number): Promise<void> => {
    while (catching) {
      const { from, done } = catching;
      await done;
      if (from >= asOf) return;
    }
    if (readSince >= asOf) return;
    const from = performance.now();
    const done = caughtUp().then(() => void (readSince = from));
    catching = { from, done };
    try {
      await done;
    } finally {
      if (catching?.done === done) catching = undefined;
    }
  };
  const caughtUp = async () => {
    const read = await readChanges();
    if (read === 'reload') {
      await load();
      return;
    }
    if (read) {
      let audiencesMoved = false;
      for (const row of read.entries) {
        if (row.seq <= applied) continue;
        if (row.kind === 'add' && row.terms) add(row.chunk!, row.channelId!, row.length!, row.terms);
        else if (row.kind === 'remove') remove(row.chunk!, row.oldTerms ?? undefined);
        else if (row.kind === 'audiences' && read.audiences) {
          audiences = read.audiences;
          audiencesMoved = takeAudiences() || audiencesMoved;
        }
        applied = row.seq;
      }
      if (audiencesMoved || pendingRecount) recount();
      pendingRecount = false;
      version += 1;
    }
    if (deletedCount > 10_000 && deletedCount > compactShare * docCount) await load();
  };

  /** Learns the ids of stems not asked before: one query for a question's. */
  const learn = async (stems: Iterable<string>) => {
    const unknown = [...new Set(stems)].filter((stem) => !termIds.has(stem));
    if (unknown.length === 0) return;
    if (termIds.size + unknown.length > 100_000) termIds.clear();
    // A stem no chunk has is not kept: asked again next time, it is found once a chunk brings it.
    const found = await store.search.termIds(unknown);
    for (const [stem, id] of found) termIds.set(stem, id);
    // Statistics made before kept a frequency of 0 for these stems: they are made again.
    if (found.size > 0) version += 1;
  };

  /** A learned stem's id; undefined for one no chunk had when it was asked. */
  const termId = (stem: string): number | undefined => termIds.get(stem);

  const statistics = (channelIds: ReadonlySet<string>): Stats.Stats => {
    const audiences = new Set([0]);
    for (const id of channelIds) {
      const index = channelIndex.get(id);
      const audience = index === undefined ? -1 : channelAudience[index]!;
      if (audience >= 0) audiences.add(audience);
    }
    const key = [...audiences].sort((x, y) => x - y).join(',');
    const cached = statsCache.get(key);
    if (cached?.version === version) return cached.stats;
    const parts = [...audiences].map(countsOf);
    const stats = Stats.fromCounts({
      chunkCount: parts.reduce((n, c) => n + c.chunks, 0),
      totalTokens: parts.reduce((n, c) => n + c.tokens, 0),
      df: (stem) => {
        const id = termId(stem);
        return id === undefined ? 0 : parts.reduce((n, c) => n + dfOf(c, id), 0);
      },
    });
    if (statsCache.size > 1000) statsCache.clear();
    statsCache.set(key, { version, stats });
    return stats;
  };

  const rank = async (query: SearchQuery, exhaustive: boolean): Promise<SearchHit[]> => {
    // Term ids never change once given: they are read beside the log, not after it.
    await Promise.all([catchUp(query.asOf ?? performance.now()), learn(query.terms.map((t) => t.stem))]);
    const allowed = new Uint8Array(channelIndex.size);
    let any = false;
    for (const id of query.channelIds) {
      const index = channelIndex.get(id);
      if (index !== undefined && channelAudience[index]! >= 0) {
        allowed[index] = 1;
        any = true;
      }
    }
    if (!any || query.limit <= 0) return [];
    const stats = statistics(query.channelIds);
    const terms: MaxScore.ScoredTerm[] = [];
    for (const stem of new Set(query.terms.map((t) => t.stem))) {
      const id = termId(stem);
      const list = id === undefined ? undefined : postings[id];
      if (list && list.length > 0) terms.push({ list, idf: stats.idf(stem) });
    }
    ensureScratch();
    const ranked = MaxScore.topK({
      terms,
      documents: docCount,
      blockSize: options.blockSize,
      scratch,
      k: query.limit,
      scoring: { k1, b, averageLength: stats.averageTokens, docLength: lengths },
      accept: (doc) => deleted[doc] === 0 && allowed[channelOfDoc[doc]!] === 1,
      exhaustive,
    });
    return ranked.map((r) => ({ rowid: rowids[r.doc]!, score: r.score }));
  };

  await load();
  return {
    name: 'maxscore',
    search: (query) => rank(query, false),
    searchExhaustive: (query) => rank(query, true),
    async statistics(channelIds, stems) {
      await Promise.all([catchUp(performance.now()), learn(stems)]);
      return statistics(channelIds);
    },
    size: () => ({ chunks: docCount - deletedCount, terms: postings.reduce((n, l) => n + (l ? 1 : 0), 0), postings: postingCount }),
  };
}
