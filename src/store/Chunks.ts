import type { Sql } from './Sql.js';

/** A chunk with its item's fields, as retrieval reads a candidate. */
export type ChunkRow = {
  rowid: number;
  chunkId: string;
  itemId: string;
  channelId: string;
  ordinal: number;
  text: string;
  tokenCount: number;
  title: string;
  sourceUrl: string | null;
  publishedAt: number | null;
  startSeconds: number | null;
  endSeconds: number | null;
  /** Pages of a paged document the chunk spans. */
  pageStart: number | null;
  pageEnd: number | null;
  /** Transcripts: where each cue starts in the chunk text, as JSON [[offset, seconds], ...]. */
  cues: string | null;
};

/** Rowids in a list: PostgreSQL reads `= ANY` of an array straight from the key, with less planning than a subquery. */
const among = { sqlite: 'IN (SELECT value FROM json_each(?))', postgres: '= ANY(CAST(? AS BIGINT[]))' };

/** The chunks of the given rowids that exist, with their items' fields: one query for a question's candidates. */
export async function rows(sql: Sql, rowids: number[]): Promise<ChunkRow[]> {
  if (rowids.length === 0) return [];
  return sql.all<ChunkRow>(
    `SELECT c.rowid AS rowid, c.id AS chunkId, c.item_id AS itemId, i.channel_id AS channelId, c.ordinal, c.text, c.token_count AS tokenCount,
       i.title, i.source_url AS sourceUrl, i.published_at AS publishedAt, c.start_seconds AS startSeconds, c.end_seconds AS endSeconds,
       c.page_start AS pageStart, c.page_end AS pageEnd, c.cues
     FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid ${among[sql.dialect]}`,
    [sql.dialect === 'sqlite' ? JSON.stringify(rowids) : rowids],
  );
}

/** The texts of an item's chunks at the given ordinals, in order. */
export async function texts(sql: Sql, itemId: string, ordinals: number[]): Promise<{ ordinal: number; text: string }[]> {
  if (ordinals.length === 0) return [];
  return sql.all<{ ordinal: number; text: string }>(`SELECT ordinal, text FROM chunks WHERE item_id = ? AND ordinal IN (${ordinals.map(() => '?').join(', ')}) ORDER BY ordinal`, [
    itemId,
    ...ordinals,
  ]);
}

/** How many chunks are stored. */
export async function count(sql: Sql): Promise<number> {
  return (await sql.get<{ n: number }>('SELECT count(*) AS n FROM chunks'))!.n;
}

/** Up to `limit` chunks after `afterRowid`, in rowid order, with their items' titles: what an embedder reads. */
export async function page(sql: Sql, afterRowid: number, limit: number): Promise<{ rowid: number; title: string; text: string }[]> {
  return sql.all('SELECT c.rowid AS rowid, i.title, c.text FROM chunks c JOIN items i ON i.id = c.item_id WHERE c.rowid > ? ORDER BY c.rowid LIMIT ?', [afterRowid, limit]);
}
