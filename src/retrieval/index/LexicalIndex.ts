import type { Store } from '../../store/Store.js';
import * as LogHoles from '../LogHoles.js';
import * as Audiences from './Audiences.js';
import { dfOf, InvertedIndex } from './InvertedIndex.js';
import * as MaxScore from './MaxScore.js';
import type { SearchHit, SearchIndex, SearchQuery } from './SearchIndex.js';
import * as SearchLog from './SearchLog.js';
import * as SearchShards from './SearchShards.js';
import * as SearchTerms from './SearchTerms.js';
import * as Snapshot from './Snapshot.js';
import * as SnapshotStore from './SnapshotStore.js';
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
  statistics(channelIds: ReadonlySet<string>, stems: Iterable<string>, asOf?: number): Promise<Stats.Stats>;
  /**
   * Reads the log and learns the ids of `stems` now, ahead of a question's statistics and searches: those asked as
   * of a moment before this call wait for nothing more (on PostgreSQL, a round trip taken beside the question's
   * others instead of after them).
   */
  prepare(stems: Iterable<string>): Promise<void>;
  /** The same ranking, scoring every matching chunk: the reference the pruned search equals. */
  searchExhaustive(query: SearchQuery): Promise<SearchHit[]>;
  /** What the index holds, for benchmarks and diagnostics. */
  size(): { chunks: number; terms: number; postings: number };
  /**
   * Where the index was loaded from, the write-log position it has applied, and the id of a snapshot it refused at
   * its last load (to be made again).
   */
  origin(): { source: 'snapshot' | 'rows'; position: number; refused?: string };
  /**
   * Writes the index, caught up to the last write, as the store's snapshot: its size and the position it covers.
   * Run by one instance at a time (SnapshotKeeper).
   */
  writeSnapshot(): Promise<{ bytes: number; position: number }>;
  /** Threads a question's first stage uses, this one included, once those the index is large enough for have started. */
  threads(): Promise<number>;
  /** Ends the search threads. */
  close(): Promise<void>;
};

const k1 = 1.2;
const b = 0.75;
/** A full rebuild drops the postings of removed chunks once they are this share of the index. */
const compactShare = 0.25;

export type Options = {
  onProgress?: (stage: string) => void;
  /** Told how far loading has got, as it goes: for readiness. */
  onLoading?: (progress: SnapshotStore.Progress) => void;
  /** Start from the store's snapshot when one fits (default true); told why when one does not. */
  snapshot?: boolean;
  onSnapshotRefused?: (reason: string) => void;
  /** Threads a question's first stage may use, this one included (default 1), and from how many chunks (SearchShards). */
  threads?: number;
  threadMinChunks?: number;
  /** A search thread failed: questions are split over the others from then on (searched here alone when none is left). */
  onThreadFailure?: (error: Error) => void;
};

/** Opens the index over a store: fills rows missing from `search_docs`, then loads them. */
export async function open(store: Store, options: Options = {}): Promise<LexicalIndex> {
  const filled = await SearchTerms.fill(store, { onProgress: (done, total) => options.onProgress?.(`indexed ${done} of ${total} chunks`) });
  if (filled > 0) options.onProgress?.(`indexed ${filled} chunks`);
  const index = new CurrentIndex(store, options);
  await index.load(options.snapshot ?? true);
  return {
    name: 'maxscore',
    search: (query) => index.rank(query, false),
    searchExhaustive: (query) => index.rank(query, true),
    statistics: (channelIds, stems, asOf) => index.statisticsNow(channelIds, stems, asOf),
    prepare: (stems) => index.prepare(stems),
    size: () => index.inverted.size(),
    origin: () => ({ source: index.source, position: index.position, ...(index.refused !== undefined && { refused: index.refused }) }),
    async writeSnapshot() {
      await index.catchUpNow();
      return SnapshotStore.write(store, () => ({ index: index.inverted, position: index.position, holes: index.holes.carry(), holesFloor: index.holes.logStart() }));
    },
    threads: () => index.shards.start(index.inverted.docCount),
    close: () => index.shards.close(),
  };
}

/** The inverted index kept current from the search log, the ids of the stems asked, and statistics by scope. */
class CurrentIndex {
  inverted = new InvertedIndex();
  private readonly termIds = new Map<string, number>();
  /** Stems no chunk had when asked, with the count of `applies` then: absent while it has not moved. */
  private readonly absent = new Map<string, number>();
  /** Moves whenever the index takes in what the store holds: each load, and each catch-up that read anything. */
  private applies = 0;
  /** The last log entry applied. */
  private applied = 0;
  /** Positions below `applied` still empty, whose writes may yet commit. */
  readonly holes = new LogHoles.Holes();
  /** Moves whenever what the index holds changes: statistics are cached until it does. */
  private version = 0;
  private readonly statsCache = new Map<string, { version: number; stats: Stats.Stats }>();
  private readonly catchUp = new SearchLog.CatchUp(() => this.caughtUp());
  readonly shards: SearchShards.Shards;
  source: 'snapshot' | 'rows' = 'rows';
  /** The snapshot the last load refused, if it refused one. */
  refused: string | undefined;

  constructor(
    private readonly store: Store,
    private readonly options: Options,
  ) {
    this.shards = SearchShards.create({ threads: options.threads ?? 1, minDocuments: options.threadMinChunks ?? 0, onFailure: options.onThreadFailure });
  }

  /** The last log entry applied. */
  get position(): number {
    return this.applied;
  }

  /** Reads and applies what was logged until now. */
  catchUpNow(): Promise<void> {
    return this.catchUp.asOf(performance.now());
  }

  /**
   * Loads the index: from the store's snapshot when `fromSnapshot` and one fits (then the log is followed from its
   * position by the next search, as always), else from `search_docs`.
   */
  async load(fromSnapshot = false): Promise<void> {
    if (fromSnapshot) {
      try {
        const restored = await SnapshotStore.read(this.store, this.options.onLoading);
        if (restored) {
          this.took(restored.index, restored.position, 'snapshot');
          this.holes.adopt(restored.holes);
          // Holes below the log's start when the snapshot was written do not count as pruned past later.
          this.holes.prunedPast(restored.holesFloor);
          return;
        }
      } catch (error) {
        if (!(error instanceof Snapshot.Refused)) throw error;
        this.refused = error.snapshotId;
        this.options.onSnapshotRefused?.(error.message);
      }
    }
    await this.loadRows();
  }

  /**
   * Builds everything from `search_docs`. The log position is read first: a write that lands while the rows are read
   * is in them or after that position, and applying it again is harmless (`add` replaces, `remove` of what is gone
   * does nothing).
   */
  private async loadRows(): Promise<void> {
    const { first, last } = await this.store.search.logBounds();
    const start = last ?? 0;
    // Writes numbered below `start` and still in flight are not in the rows read next: their positions are holes.
    const below = Math.max(0, start - LogHoles.loadWindow);
    const present = await this.store.search.present(below, start);
    const audiences = await Audiences.read(this.store);
    const total = this.options.onLoading ? await this.store.search.count() : 0;
    // Built beside the index in use, page by page: a search meanwhile sees the old index or the new one, whole.
    const building = InvertedIndex.build(audiences);
    for (let after = 0, done = 0; ; ) {
      const page = await this.store.search.page(after, SearchLog.pageSize);
      if (page.length === 0) break;
      building.append(page);
      after = page.at(-1)!.rowid;
      done += page.length;
      this.options.onLoading?.({ source: 'rows', done, total: Math.max(total, done) });
    }
    this.took(building.finish(), start, 'rows');
    this.holes.missingFrom(below, start, present);
    // Those below the log's first position were pruned before this load, not passed by it.
    this.holes.prunedPast(first);
  }

  /** Puts a loaded index in use, covering the log to `position`. */
  private took(inverted: InvertedIndex, position: number, source: 'snapshot' | 'rows'): void {
    this.inverted = inverted;
    this.applies += 1;
    this.applied = position;
    this.holes.clear();
    this.source = source;
    // Each list's bound for the public average length, so the first questions after a start do not pay a pass over
    // every long list they name (seconds at millions of chunks).
    const everyone = this.inverted.publicCounts();
    if (everyone && everyone.chunks > 0) {
      const scoring = { k1, b, averageLength: everyone.tokens / everyone.chunks, docLength: this.inverted.lengths };
      for (const list of this.inverted.postings) list?.bound(scoring);
    }
    this.version += 1;
    // The search threads start with the index that needs them, so they are ready by its first question.
    void this.shards.start(inverted.docCount);
  }

  /** Statistics current to the last write (as of `asOf`), knowing the document frequencies of `stems`. */
  async statisticsNow(channelIds: ReadonlySet<string>, stems: Iterable<string>, asOf = performance.now()): Promise<Stats.Stats> {
    await this.prepareAsOf(stems, asOf);
    return this.statistics(channelIds);
  }

  /** Reads the log and learns the ids of `stems`, now. */
  prepare(stems: Iterable<string>): Promise<void> {
    return this.prepareAsOf(stems, performance.now());
  }

  /**
   * Term ids never change once given: they are read beside the log, not after it. A stem no chunk had when last asked
   * is taken as absent still when the log was read as of `asOf` already and nothing was applied since the stem was
   * asked (a chunk that brings it comes through the log or a load, and a lookup begun after that was applied finds
   * it): a question's statistics and searches after its first read. Otherwise it is asked again, beside the log.
   */
  private async prepareAsOf(stems: Iterable<string>, asOf: number): Promise<void> {
    const current = this.catchUp.covers(asOf);
    const unknown = [...new Set(stems)].filter((stem) => !this.termIds.has(stem) && !(current && this.absent.get(stem) === this.applies));
    await Promise.all([this.catchUp.asOf(asOf), this.learn(unknown)]);
  }

  /** The best `query.limit` chunks in scope by BM25: pruned by MaxScore, or scoring every match (`exhaustive`). */
  async rank(query: SearchQuery, exhaustive: boolean): Promise<SearchHit[]> {
    await this.prepareAsOf(query.terms.map((t) => t.stem), query.asOf ?? performance.now());
    const { channels, postings } = this.inverted;
    const allowed = new Uint8Array(channels.size);
    let any = false;
    for (const id of query.channelIds) {
      const index = channels.find(id);
      if (index !== undefined && channels.audience(index) >= 0) {
        allowed[index] = 1;
        any = true;
      }
    }
    if (!any || query.limit <= 0) return [];
    const stats = this.statistics(query.channelIds);
    const terms: MaxScore.ScoredTerm[] = [];
    for (const stem of new Set(query.terms.map((t) => t.stem))) {
      const id = this.termIds.get(stem);
      const list = id === undefined ? undefined : postings[id];
      if (list && list.length > 0) terms.push({ list, idf: stats.idf(stem) });
    }
    // Taken now: a reload while search threads read replaces the index, never changes this one (writes wait for them).
    const { rowids, lengths, deleted, channelOfDoc, docCount } = this.inverted;
    const plan = MaxScore.plan({
      terms,
      k: query.limit,
      scoring: { k1, b, averageLength: stats.averageTokens, docLength: lengths },
      accept: (doc) => deleted[doc] === 0 && allowed[channelOfDoc[doc]!] === 1,
      exhaustive,
    });
    if (!plan) return [];
    const parts = await this.shards.search(plan, docCount, { deleted, channelOfDoc, allowed });
    for (const part of parts) MaxScore.counters.postings += part.postings;
    return MaxScore.best(parts, query.limit).map((r) => ({ rowid: rowids[r.doc]!, score: r.score }));
  }

  /** Reads what other writes logged since the last look, then applies it at once. */
  private async caughtUp(): Promise<void> {
    const read = await SearchLog.changes(this.store, this.applied, this.holes);
    if (read === 'reload') {
      await this.load();
      return;
    }
    // A search thread may be reading the index: it is changed once no question is split over threads.
    if (read) await this.shards.exclusive(() => this.apply(this.inverted, read));
    const { deletedCount, docCount } = this.inverted;
    if (deletedCount > 10_000 && deletedCount > compactShare * docCount) await this.load();
  }

  /** Applies what was read from the log. */
  private apply(inverted: InvertedIndex, read: SearchLog.Changes): void {
    this.applies += 1;
    let audiencesMoved = false;
    for (const row of read.entries) {
      // An entry below the last applied is one that committed late, into a hole; entries for one chunk never
      // commit out of order (the chunk's row is locked), so applying it now is what applying it in order was.
      if (row.seq <= this.applied && !this.holes.has(row.seq)) continue;
      this.holes.fill(row.seq);
      if (row.seq > this.applied) {
        this.holes.between(this.applied, row.seq);
        this.applied = row.seq;
      }
      if (row.kind === 'add' && row.terms) inverted.add(row.chunk!, row.channelId!, row.length!, row.terms);
      else if (row.kind === 'remove') inverted.remove(row.chunk!, row.oldTerms ?? undefined);
      else if (row.kind === 'audiences' && read.audiences) audiencesMoved = inverted.channels.take(read.audiences) || audiencesMoved;
    }
    inverted.settle(audiencesMoved);
    this.version += 1;
  }

  /** Learns the ids of stems not known: one query for a question's. One no chunk has is remembered as absent. */
  private async learn(unknown: string[]): Promise<void> {
    if (unknown.length === 0) return;
    if (this.termIds.size + unknown.length > 100_000) this.termIds.clear();
    if (this.absent.size + unknown.length > 100_000) this.absent.clear();
    const asked = this.applies;
    const found = await this.store.search.termIds(unknown);
    for (const stem of unknown) {
      const id = found.get(stem);
      if (id === undefined) this.absent.set(stem, asked);
      else {
        this.termIds.set(stem, id);
        this.absent.delete(stem);
      }
    }
    // Statistics made before kept a frequency of 0 for these stems: they are made again.
    if (found.size > 0) this.version += 1;
  }

  /** Statistics over the public audience and the private audiences of the given channels, cached per audience set. */
  private statistics(channelIds: ReadonlySet<string>): Stats.Stats {
    const { channels } = this.inverted;
    const audiences = new Set([0]);
    for (const id of channelIds) {
      const index = channels.find(id);
      const audience = index === undefined ? -1 : channels.audience(index);
      if (audience >= 0) audiences.add(audience);
    }
    const key = [...audiences].sort((x, y) => x - y).join(',');
    const cached = this.statsCache.get(key);
    if (cached?.version === this.version) return cached.stats;
    const parts = [...audiences].map((audience) => this.inverted.countsOf(audience));
    const stats = Stats.fromCounts({
      chunkCount: parts.reduce((n, c) => n + c.chunks, 0),
      totalTokens: parts.reduce((n, c) => n + c.tokens, 0),
      df: (stem) => {
        // A learned stem's id; undefined for one no chunk had when it was asked.
        const id = this.termIds.get(stem);
        return id === undefined ? 0 : parts.reduce((n, c) => n + dfOf(c, id), 0);
      },
    });
    if (this.statsCache.size > 1000) this.statsCache.clear();
    this.statsCache.set(key, { version: this.version, stats });
    return stats;
  }
}
