/**
 * The seam retrieval searches through. SQLite is the system of record; an index is derived from it, rebuildable, and
 * kept current from the transactions that write chunks. The lexical first stage, vector search and a future
 * distributed engine are implementations of this one interface.
 */

/** A chunk an index found: the chunk's key in the store (`chunks.rowid`) and the index's own score, higher better. */
export type SearchHit = { rowid: number; score: number };

/** A question's term as the index reads it: the token as written and its Porter stem. */
export type QueryTerm = { token: string; stem: string };

export type SearchQuery = {
  /** The question's key terms (stopwords left out), for lexical indexes. */
  terms: QueryTerm[];
  /** The question as asked, for indexes that embed it. */
  text: string;
  /** The channels hits may come from: the caller's scope. Nothing outside it is found or counted. */
  channelIds: ReadonlySet<string>;
  limit: number;
  /**
   * When the question was asked (`performance.now()`): an index kept current from a log answers as of a read of it
   * made since then, reading it again only if it made none. Without it the log is read at every search.
   */
  asOf?: number | undefined;
};

export type SearchIndex = {
  /** Names the implementation in diagnostics and benchmarks. */
  readonly name: string;
  /** The best `limit` chunks in scope, best first; ties go to the earlier chunk. */
  search(query: SearchQuery): Promise<SearchHit[]>;
};
