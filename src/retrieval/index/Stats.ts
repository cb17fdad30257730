/**
 * Collection statistics BM25 and the features need: chunk count, average length, document frequency. They are
 * counted over the content a caller may read (see `LexicalIndex.statistics`), so a score never depends on text the
 * caller cannot see.
 */
export type Stats = {
  chunkCount: number;
  averageTokens: number;
  /** In how many chunks a stem occurs. */
  df(stem: string): number;
  /** Inverse document frequency, always positive: log(1 + (N - df + 0.5) / (df + 0.5)). */
  idf(stem: string): number;
};

/** BM25's IDF, kept positive for terms in more than half the chunks. */
export function idf(chunkCount: number, df: number): number {
  const d = Math.min(df, chunkCount);
  return Math.log(1 + (chunkCount - d + 0.5) / (d + 0.5));
}

/** Statistics from counts: document frequencies are looked up once per stem and remembered. */
export function fromCounts(counts: { chunkCount: number; totalTokens: number; df(stem: string): number }): Stats {
  const dfs = new Map<string, number>();
  const df = (stem: string) => {
    let value = dfs.get(stem);
    if (value === undefined) {
      value = counts.df(stem);
      if (dfs.size > 10_000) dfs.clear();
      dfs.set(stem, value);
    }
    return value;
  };
  return {
    chunkCount: counts.chunkCount,
    averageTokens: counts.chunkCount > 0 ? counts.totalTokens / counts.chunkCount || 1 : 1,
    df,
    idf: (stem) => idf(counts.chunkCount, df(stem)),
  };
}
