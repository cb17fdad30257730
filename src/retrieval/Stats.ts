import type { Database } from '../store/Database.js';

/** Collection statistics BM25 and the features need: chunk count, average length, document frequency. */
export type Stats = {
  chunkCount: number;
  averageTokens: number;
  /** In how many chunks a stem occurs. */
  df(stem: string): number;
  /** Inverse document frequency, always positive: log(1 + (N - df + 0.5) / (df + 0.5)). */
  idf(stem: string): number;
};

/**
 * Statistics read from the store and reused while it is unchanged: `PRAGMA data_version` moves when another
 * connection commits, and `invalidate()` covers writes made through this one.
 */
export function create(db: Database): { current(): Stats; invalidate(): void } {
  const totals = db.prepare('SELECT count(*) AS n, coalesce(avg(token_count), 0) AS avg FROM chunks');
  const vocab = db.prepare('SELECT doc FROM chunk_vocab WHERE term = ?').pluck();
  let cached: { version: number; stats: Stats } | undefined;
  const version = () => db.pragma('data_version', { simple: true }) as number;
  const build = (): Stats => {
    const { n, avg } = totals.get() as { n: number; avg: number };
    const dfs = new Map<string, number>();
    const df = (stem: string) => {
      let value = dfs.get(stem);
      if (value === undefined) {
        value = (vocab.get(stem) as number | undefined) ?? 0;
        dfs.set(stem, value);
      }
      return value;
    };
    return {
      chunkCount: n,
      averageTokens: avg || 1,
      df,
      idf: (stem) => {
        const d = Math.min(df(stem), n);
        return Math.log(1 + (n - d + 0.5) / (d + 0.5));
      },
    };
  };
  return {
    current() {
      const v = version();
      if (!cached || cached.version !== v) cached = { version: v, stats: build() };
      return cached.stats;
    },
    invalidate() {
      cached = undefined;
    },
  };
}
