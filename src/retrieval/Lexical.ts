import * as Channels from '../store/Channels.js';
import type { Database } from '../store/Database.js';
import type { Stats } from './Stats.js';

/** A chunk the full-text index found, with its FTS5 BM25 (title weighted 3:1, higher is better). */
export type Hit = { rowid: number; bm25: number };

/** Above this many chunks, the most common query terms are left out of the first stage (they are still scored). */
const pruneFrom = 20_000;
/** A term in more than this share of chunks is too common to drive candidate generation on a large index. */
const commonShare = 0.1;
/** A scope this small is intersected inside the index; a larger one is filtered after it. */
const narrowScope = 64;

const quote = (token: string) => `"${token.replace(/"/g, '""')}"`;

/** Hex of a channel id: the single token the `scope` column holds for each of the channel's chunks. */
export const scopeToken = (channelId: string): string => Buffer.from(channelId, 'utf8').toString('hex').toUpperCase();

/**
 * The terms that drive the first stage: all of them on a small index; on a large one the rarer ones (at least two),
 * since a very common term's posting list costs the most and moves the ranking the least.
 */
export function driverTerms(terms: { token: string; stem: string }[], stats: Stats): { token: string; stem: string }[] {
  if (stats.chunkCount < pruneFrom || terms.length <= 2) return terms;
  const byRarity = [...terms].sort((a, b) => stats.df(a.stem) - stats.df(b.stem));
  const rare = byRarity.filter((t) => stats.df(t.stem) <= commonShare * stats.chunkCount);
  return rare.length >= 2 ? rare : byRarity.slice(0, 2);
}

/**
 * The first stage: an OR query of the question's terms over titles and texts, limited to the allowed channels and
 * ranked by FTS5's BM25. Narrow scopes are intersected in the index; wide ones are filtered as rows come back.
 */
export function search(
  db: Database,
  options: { terms: { token: string; stem: string }[]; stats: Stats; channelIds: Set<string>; limit: number },
): Hit[] {
  if (options.terms.length === 0 || options.channelIds.size === 0) return [];
  // Question terms search titles and texts only, never the scope column.
  const match = `{title text} : (${driverTerms(options.terms, options.stats).map((t) => quote(t.token)).join(' OR ')})`;
  if (options.channelIds.size <= narrowScope) {
    const scope = [...options.channelIds].map((id) => quote(scopeToken(id))).join(' OR ');
    return db
      .prepare(`SELECT rowid, -bm25(chunk_fts, 3.0, 1.0, 0.0) AS bm25 FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY bm25 DESC LIMIT ?`)
      .all(`${match} AND scope : (${scope})`, options.limit) as Hit[];
  }
  const query = db.prepare(`SELECT rowid, -bm25(chunk_fts, 3.0, 1.0, 0.0) AS bm25 FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY bm25 DESC LIMIT ?`);
  // Every channel allowed (the common global case): nothing to filter.
  if (options.channelIds.size >= Channels.count(db)) return query.all(match, options.limit) as Hit[];
  const channelOf = db.prepare('SELECT c.rowid AS rowid, i.channel_id AS channelId FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid IN (SELECT value FROM json_each(?))');
  // A wide scope is filtered after the index; when most hits fall outside it, look deeper rather than miss.
  for (const depth of [4, 40, Infinity]) {
    const rows = query.all(match, depth === Infinity ? -1 : options.limit * depth) as Hit[];
    const channels = new Map((channelOf.all(JSON.stringify(rows.map((r) => r.rowid))) as { rowid: number; channelId: string }[]).map((r) => [r.rowid, r.channelId]));
    const inScope = rows.filter((r) => options.channelIds.has(channels.get(r.rowid)!));
    if (inScope.length >= options.limit || depth === Infinity || rows.length < options.limit * depth) return inScope.slice(0, options.limit);
  }
  return [];
}
