import type { Database } from './Database.js';
import * as Ids from './Ids.js';
import * as Text from '../retrieval/Text.js';
import * as SearchDocs from './SearchDocs.js';
import * as VectorIndex from './VectorIndex.js';

/** A chunk before it is stored. */
export type ChunkDraft = {
  text: string;
  /** Index tokens of the text and its item title; set by the store when absent. */
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
 * Stores an item and its chunks. Unchanged content (same fingerprint) writes at most its metadata; changed content replaces the
 * item's chunks in one transaction, so readers see the old chunks or the new ones, never a mix.
 */
export function put(db: Database, draft: ItemDraft): { itemId: string; outcome: Outcome; chunkCount: number } {
  const id = itemId(draft.channelId, draft.externalId);
  return SearchDocs.writing(db, () => db.transaction(() => {
    const existing = db.prepare('SELECT content_hash AS contentHash, metadata FROM items WHERE id = ?').get(id) as { contentHash: string; metadata: string | null } | undefined;
    if (existing?.contentHash === draft.contentHash) {
      // The same text: only what the item records about itself (a retry schedule) may have moved on.
      const metadata = JSON.stringify(draft.metadata ?? {});
      if (existing.metadata !== metadata) db.prepare('UPDATE items SET metadata = ? WHERE id = ?').run(metadata, id);
      const chunkCount = db.prepare('SELECT count(*) FROM chunks WHERE item_id = ?').pluck().get(id) as number;
      return { itemId: id, outcome: 'unchanged' as const, chunkCount };
    }
    const now = Date.now();
    if (existing) {
      db.prepare('DELETE FROM chunks WHERE item_id = ?').run(id);
      db.prepare(
        `UPDATE items SET title = ?, source_url = ?, published_at = ?, author = ?, content_hash = ?, metadata = ?, updated_at = ? WHERE id = ?`,
      ).run(draft.title, draft.sourceUrl ?? null, draft.publishedAt ?? null, draft.author ?? null, draft.contentHash, JSON.stringify(draft.metadata ?? {}), now, id);
    } else {
      db.prepare(
        `INSERT INTO items (id, channel_id, external_id, title, source_url, published_at, author, content_hash, metadata, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(id, draft.channelId, draft.externalId, draft.title, draft.sourceUrl ?? null, draft.publishedAt ?? null, draft.author ?? null,
        draft.contentHash, JSON.stringify(draft.metadata ?? {}), now, now);
    }
    const insert = db.prepare(
      `INSERT INTO chunks (id, item_id, ordinal, text, char_count, token_count, start_seconds, end_seconds, speaker, page_start, page_end, cues)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const titleTokens = Text.tokens(draft.title).length;
    const docs = draft.chunks.map((chunk, ordinal): SearchDocs.SearchDoc => {
      const length = chunk.tokenCount ?? titleTokens + Text.tokens(chunk.text).length;
      const rowid = Number(
        insert.run(Ids.stable('ck', id, ordinal, draft.contentHash), id, ordinal, chunk.text, chunk.text.length,
          length, chunk.startSeconds ?? null, chunk.endSeconds ?? null, chunk.speaker ?? null,
          chunk.pageStart ?? null, chunk.pageEnd ?? null, chunk.cues?.length ? JSON.stringify(chunk.cues) : null).lastInsertRowid,
      );
      return { rowid, channelId: draft.channelId, title: draft.title, text: chunk.text, length };
    });
    // The search index's rows are written with the chunks: a chunk is searchable as soon as it is stored.
    SearchDocs.put(db, docs);
    const rowids = docs.map((d) => d.rowid);
    if (draft.vectors) VectorIndex.put(db, rowids.map((rowid, i) => ({ rowid, vector: draft.vectors![i]! })));
    return { itemId: id, outcome: existing ? ('updated' as const) : ('created' as const), chunkCount: draft.chunks.length };
    // Immediate: the read and the writes see one snapshot even while another connection writes.
  }).immediate());
}

/** The stored fingerprint of an item, if it exists: lets ingestion skip work for unchanged content. */
export function contentHash(db: Database, channelId: string, externalId: string): string | undefined {
  return db.prepare('SELECT content_hash FROM items WHERE id = ?').pluck().get(itemId(channelId, externalId)) as string | undefined;
}

/** Removes an item and its chunks. */
export function remove(db: Database, id: string): boolean {
  return db.prepare('DELETE FROM items WHERE id = ?').run(id).changes > 0;
}

/** The items of a channel, newest first. */
export function byChannel(db: Database, channelId: string): StoredItem[] {
  return db
    .prepare(
      `SELECT i.id, i.channel_id AS channelId, i.external_id AS externalId, i.title, i.source_url AS sourceUrl, i.published_at AS publishedAt,
         i.author, i.content_hash AS contentHash, i.updated_at AS updatedAt, (SELECT count(*) FROM chunks c WHERE c.item_id = i.id) AS chunkCount
       FROM items i WHERE i.channel_id = ? ORDER BY i.published_at DESC, i.id`,
    )
    .all(channelId) as StoredItem[];
}

/**
 * What a channel's items record about their text, by item id: still waiting for it (`pendingText`, from stand-in
 * text) or given up on (`textUnavailable`). Items with neither are left out.
 */
export function textNotes(db: Database, channelId: string): Map<string, string> {
  const rows = db
    .prepare(
      `SELECT id, json_extract(metadata, '$.pendingText.reason') AS reason, json_extract(metadata, '$.pendingText.next') AS next,
         json_extract(metadata, '$.textUnavailable') AS unavailable
       FROM items WHERE channel_id = ? AND json_valid(metadata) AND (reason IS NOT NULL OR unavailable IS NOT NULL)`,
    )
    .all(channelId) as { id: string; reason: string | null; next: number | null; unavailable: string | null }[];
  return new Map(rows.map((r) => [r.id, r.reason ? `stand-in text; ${r.reason}; next try after ${new Date(r.next ?? 0).toISOString()}` : `stand-in text for good; ${r.unavailable}`]));
}

/** One stored chunk as a citation page shows it. */
export type StoredChunk = { id: string; ordinal: number; text: string; startSeconds: number | null; endSeconds: number | null; pageStart: number | null; pageEnd: number | null };

/** An item with its chunks in order, or undefined. */
export function withChunks(db: Database, id: string): (StoredItem & { chunks: StoredChunk[] }) | undefined {
  const item = db
    .prepare(
      `SELECT i.id, i.channel_id AS channelId, i.external_id AS externalId, i.title, i.source_url AS sourceUrl, i.published_at AS publishedAt,
         i.author, i.content_hash AS contentHash, i.updated_at AS updatedAt, (SELECT count(*) FROM chunks c WHERE c.item_id = i.id) AS chunkCount
       FROM items i WHERE i.id = ?`,
    )
    .get(id) as StoredItem | undefined;
  if (!item) return undefined;
  const chunks = db
    .prepare(
      `SELECT id, ordinal, text, start_seconds AS startSeconds, end_seconds AS endSeconds, page_start AS pageStart, page_end AS pageEnd
       FROM chunks WHERE item_id = ? ORDER BY ordinal`,
    )
    .all(id) as StoredChunk[];
  return { ...item, chunks };
}

/** Item and chunk totals of a channel. */
export function counts(db: Database, channelId: string): { items: number; chunks: number } {
  return db
    .prepare(
      `SELECT count(DISTINCT i.id) AS items, count(c.rowid) AS chunks FROM items i LEFT JOIN chunks c ON c.item_id = i.id WHERE i.channel_id = ?`,
    )
    .get(channelId) as { items: number; chunks: number };
}
