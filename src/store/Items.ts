import * as Ids from './Ids.js';
import * as SearchDocs from './SearchDocs.js';
import type { Sql } from './Sql.js';
import * as VectorIndex from './VectorIndex.js';

/** A chunk before it is stored. */
export type ChunkDraft = {
  text: string;
  /** Index tokens of the text and its item title (set by the search analysis when absent). */
  tokenCount?: number | undefined;
  startSeconds?: number | undefined;
  endSeconds?: number | undefined;
  speaker?: string | undefined;
  /** Transcripts: where each cue starts in the text, as [character offset, start seconds], in order. */
  cues?: [number, number][] | undefined;
  /** The pages of a paged document (PDF) the chunk spans, from 1. */
  pageStart?: number | undefined;
  pageEnd?: number | undefined;
};

/** One item of a channel with its chunks, as an ingestion produces it. */
export type ItemDraft = {
  channelId: string;
  externalId: string;
  title: string;
  sourceUrl?: string | undefined;
  publishedAt?: number | undefined;
  author?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  /** Fingerprint of everything the chunks were made from; an unchanged fingerprint means nothing to do. */
  contentHash: string;
  chunks: ChunkDraft[];
  /** One vector per chunk, when an embedder is configured; written in the same transaction as the chunks. */
  vectors?: Float32Array[] | undefined;
};

/** A draft with what the search index counts of each chunk (`retrieval/index/SearchTerms.indexed`): what `put` stores. */
export type IndexedDraft = Omit<ItemDraft, 'chunks'> & { chunks: (ChunkDraft & { tokenCount: number; terms: Map<string, number> })[] };

export type StoredItem = {
  id: string;
  channelId: string;
  externalId: string;
  title: string;
  sourceUrl: string | null;
  publishedAt: number | null;
  author: string | null;
  contentHash: string;
  chunkCount: number;
  updatedAt: number;
};

export type Outcome = 'created' | 'updated' | 'unchanged';

/** An item's id follows from its channel and its id at the source. */
export const itemId = (channelId: string, externalId: string): string => Ids.stable('it', channelId, externalId);

/**
 * Stores an item and its chunks with their search rows (and vectors, when given). Unchanged content (same fingerprint)
 * writes at most its metadata; changed content replaces the item's chunks in one transaction, so readers see the old
 * chunks or the new ones, never a mix.
 */
export async function put(sql: Sql, draft: IndexedDraft): Promise<{ itemId: string; outcome: Outcome; chunkCount: number }> {
  const id = itemId(draft.channelId, draft.externalId);
  return sql.transaction(async (tx) => {
    const existing = await tx.get<{ contentHash: string; metadata: string | null }>('SELECT content_hash AS contentHash, metadata FROM items WHERE id = ?', [id]);
    if (existing?.contentHash === draft.contentHash) {
      // The same text: only what the item records about itself (a retry schedule) may have moved on.
      const metadata = JSON.stringify(draft.metadata ?? {});
      if (existing.metadata !== metadata) await tx.run('UPDATE items SET metadata = ? WHERE id = ?', [metadata, id]);
      const chunkCount = (await tx.get<{ n: number }>('SELECT count(*) AS n FROM chunks WHERE item_id = ?', [id]))!.n;
      return { itemId: id, outcome: 'unchanged' as const, chunkCount };
    }
    const now = Date.now();
    if (existing) {
      await tx.run('DELETE FROM chunks WHERE item_id = ?', [id]);
      await tx.run('UPDATE items SET title = ?, source_url = ?, published_at = ?, author = ?, content_hash = ?, metadata = ?, updated_at = ? WHERE id = ?', [
        draft.title,
        draft.sourceUrl ?? null,
        draft.publishedAt ?? null,
        draft.author ?? null,
        draft.contentHash,
        JSON.stringify(draft.metadata ?? {}),
        now,
        id,
      ]);
    } else {
      await tx.run(
        `INSERT INTO items (id, channel_id, external_id, title, source_url, published_at, author, content_hash, metadata, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [id, draft.channelId, draft.externalId, draft.title, draft.sourceUrl ?? null, draft.publishedAt ?? null, draft.author ?? null, draft.contentHash, JSON.stringify(draft.metadata ?? {}), now, now],
      );
    }
    const docs: SearchDocs.SearchDoc[] = [];
    for (const [ordinal, chunk] of draft.chunks.entries()) {
      const row = await tx.get<{ rowid: number }>(
        `INSERT INTO chunks (id, item_id, ordinal, text, char_count, token_count, start_seconds, end_seconds, speaker, page_start, page_end, cues)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rowid`,
        [
          Ids.stable('ck', id, ordinal, draft.contentHash),
          id,
          ordinal,
          chunk.text,
          chunk.text.length,
          chunk.tokenCount,
          chunk.startSeconds ?? null,
          chunk.endSeconds ?? null,
          chunk.speaker ?? null,
          chunk.pageStart ?? null,
          chunk.pageEnd ?? null,
          chunk.cues?.length ? JSON.stringify(chunk.cues) : null,
        ],
      );
      docs.push({ rowid: row!.rowid, channelId: draft.channelId, length: chunk.tokenCount, terms: chunk.terms });
    }
    // The search index's rows are written with the chunks: a chunk is searchable as soon as it is stored.
    await SearchDocs.put(tx, docs);
    if (draft.vectors) await VectorIndex.put(tx, docs.map((d, i) => ({ rowid: d.rowid, vector: draft.vectors![i]! })));
    return { itemId: id, outcome: existing ? ('updated' as const) : ('created' as const), chunkCount: draft.chunks.length };
  });
}

/** The stored fingerprint of an item, if it exists: lets ingestion skip work for unchanged content. */
export async function contentHash(sql: Sql, channelId: string, externalId: string): Promise<string | undefined> {
  return (await sql.get<{ contentHash: string }>('SELECT content_hash AS contentHash FROM items WHERE id = ?', [itemId(channelId, externalId)]))?.contentHash;
}

/** What an item records about itself (retry schedules, formats), as stored; undefined when there is no such item. */
export async function metadata(sql: Sql, channelId: string, externalId: string): Promise<string | undefined> {
  return (await sql.get<{ metadata: string }>('SELECT metadata FROM items WHERE id = ?', [itemId(channelId, externalId)]))?.metadata;
}

/** What each of a channel's items records about itself, by its id at the source. */
export async function metadataByChannel(sql: Sql, channelId: string): Promise<Map<string, string>> {
  const rows = await sql.all<{ externalId: string; metadata: string }>('SELECT external_id AS externalId, metadata FROM items WHERE channel_id = ?', [channelId]);
  return new Map(rows.map((r) => [r.externalId, r.metadata]));
}

/** Every item's id at its source, by item id: what an evaluation maps its judgments through. */
export async function externalIds(sql: Sql): Promise<Map<string, string>> {
  return new Map((await sql.all<{ id: string; externalId: string }>('SELECT id, external_id AS externalId FROM items')).map((r) => [r.id, r.externalId]));
}

/** Removes an item and its chunks. */
export async function remove(sql: Sql, id: string): Promise<boolean> {
  return (await sql.run('DELETE FROM items WHERE id = ?', [id])) > 0;
}

const itemColumns = `i.id, i.channel_id AS channelId, i.external_id AS externalId, i.title, i.source_url AS sourceUrl, i.published_at AS publishedAt,
  i.author, i.content_hash AS contentHash, i.updated_at AS updatedAt, (SELECT count(*) FROM chunks c WHERE c.item_id = i.id) AS chunkCount`;

/** The items of a channel, newest first. */
export async function byChannel(sql: Sql, channelId: string): Promise<StoredItem[]> {
  // Undated items last: SQLite puts NULL last when descending, PostgreSQL first, so it is said.
  return sql.all<StoredItem>(`SELECT ${itemColumns} FROM items i WHERE i.channel_id = ? ORDER BY i.published_at IS NULL, i.published_at DESC, i.id`, [channelId]);
}

const notes = {
  sqlite: `SELECT id, json_extract(metadata, '$.pendingText.reason') AS reason, json_extract(metadata, '$.pendingText.next') AS next,
      json_extract(metadata, '$.textUnavailable') AS unavailable
    FROM items WHERE channel_id = ? AND json_valid(metadata) AND (reason IS NOT NULL OR unavailable IS NOT NULL)`,
  postgres: `SELECT id, reason, next, unavailable FROM (
      SELECT id, metadata::jsonb #>> '{pendingText,reason}' AS reason, (metadata::jsonb #>> '{pendingText,next}')::double precision AS next,
        metadata::jsonb ->> 'textUnavailable' AS unavailable
      FROM items WHERE channel_id = ? AND metadata LIKE '{%') t
    WHERE reason IS NOT NULL OR unavailable IS NOT NULL`,
};

/**
 * What a channel's items record about their text, by item id: still waiting for it (`pendingText`, from stand-in
 * text) or given up on (`textUnavailable`). Items with neither are left out.
 */
export async function textNotes(sql: Sql, channelId: string): Promise<Map<string, string>> {
  const rows = await sql.all<{ id: string; reason: string | null; next: number | null; unavailable: string | null }>(notes[sql.dialect], [channelId]);
  return new Map(rows.map((r) => [r.id, r.reason ? `stand-in text; ${r.reason}; next try after ${new Date(r.next ?? 0).toISOString()}` : `stand-in text for good; ${r.unavailable}`]));
}

/** One stored chunk as a citation page shows it. */
export type StoredChunk = { id: string; ordinal: number; text: string; startSeconds: number | null; endSeconds: number | null; pageStart: number | null; pageEnd: number | null };

/** An item with its chunks in order, or undefined. */
export async function withChunks(sql: Sql, id: string): Promise<(StoredItem & { chunks: StoredChunk[] }) | undefined> {
  const item = await sql.get<StoredItem>(`SELECT ${itemColumns} FROM items i WHERE i.id = ?`, [id]);
  if (!item) return undefined;
  const chunks = await sql.all<StoredChunk>(
    `SELECT id, ordinal, text, start_seconds AS startSeconds, end_seconds AS endSeconds, page_start AS pageStart, page_end AS pageEnd
     FROM chunks WHERE item_id = ? ORDER BY ordinal`,
    [id],
  );
  return { ...item, chunks };
}

/** Item and chunk totals of a channel. */
export async function counts(sql: Sql, channelId: string): Promise<{ items: number; chunks: number }> {
  return (await sql.get<{ items: number; chunks: number }>(
    'SELECT count(DISTINCT i.id) AS items, count(c.rowid) AS chunks FROM items i LEFT JOIN chunks c ON c.item_id = i.id WHERE i.channel_id = ?',
    [channelId],
  ))!;
}
