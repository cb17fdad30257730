import * as SearchDocs from '../../store/SearchDocs.js';
import type { StoredDoc } from '../../store/SearchDocs.js';
import * as Audiences from './Audiences.js';
import { PostingList } from './Postings.js';

/**
 * What the lexical index holds in memory: every chunk as a document, the posting lists, and the counts statistics
 * are made of, per audience. Documents are numbered in the order they arrive (posting lists are ascending in that
 * number); a removed one is marked, and its postings stay until the index is filled afresh.
 */

/**
 * Per audience: chunks, their tokens, and in how many of them each term occurs (by term id: a dense array for the
 * public audience, which holds most terms, a map for a private profile's).
 */
export type Counts = { chunks: number; tokens: number; df: Int32Array | Map<number, number> };

export const dfOf = (c: Counts, termId: number): number => (c.df instanceof Map ? c.df.get(termId) ?? 0 : c.df[termId] ?? 0);

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

function grow<T extends Int32Array | Uint8Array>(array: T, need: number): T {
  if (need <= array.length) return array;
  const next = new (array.constructor as new (n: number) => T)(Math.max(need, array.length * 2));
  next.set(array);
  return next;
}

/** The documents, postings and counts; read by the search, changed only through the methods. */
export class InvertedIndex {
  /** Each document's chunk rowid, length in tokens, channel number and removal mark. */
  rowids = new Int32Array(1024);
  lengths = new Int32Array(1024);
  channelOfDoc = new Int32Array(1024);
  deleted = new Uint8Array(1024);
  docCount = 0;
  deletedCount = 0;
  postings: (PostingList | undefined)[] = [];
  postingCount = 0;
  readonly channels = new Audiences.ChannelAudiences();
  /** Chunk rowid to document number + 1 (0: not indexed). */
  private docOf = new Int32Array(1024);
  private counts: Counts[] = [];
  /** A document was replaced in place without its old terms at hand: the counts are made again from the postings. */
  private pendingRecount = false;

  /** An audience's counts, made empty when it has none. */
  countsOf(audience: number): Counts {
    const counts = this.counts;
    while (counts.length <= audience) counts.push({ chunks: 0, tokens: 0, df: counts.length === 0 ? new Int32Array(1024) : new Map() });
    return counts[audience]!;
  }

  /** The public audience's counts, if any were made. */
  publicCounts(): Counts | undefined {
    return this.counts[0];
  }

  /** Indexes a chunk's document, replacing the chunk's earlier one. */
  add(rowid: number, channelId: string, length: number, terms: Uint8Array): void {
    if (rowid < this.docOf.length && this.docOf[rowid]! > 0) this.remove(rowid, undefined);
    const doc = this.docCount++;
    this.rowids = grow(this.rowids, this.docCount);
    this.lengths = grow(this.lengths, this.docCount);
    this.channelOfDoc = grow(this.channelOfDoc, this.docCount);
    this.deleted = grow(this.deleted, this.docCount);
    this.docOf = grow(this.docOf, rowid + 1);
    this.rowids[doc] = rowid;
    this.lengths[doc] = length;
    const channel = this.channels.number(channelId);
    this.channelOfDoc[doc] = channel;
    this.docOf[rowid] = doc + 1;
    const audience = this.channels.audience(channel);
    const c = audience >= 0 ? this.countsOf(audience) : undefined;
    if (c) {
      c.chunks += 1;
      c.tokens += length;
    }
    SearchDocs.decode(terms, (termId, count) => {
      let list = this.postings[termId];
      if (!list) this.postings[termId] = list = new PostingList();
      list.push(doc, count);
      this.postingCount += 1;
      if (c) addDf(c, termId, 1);
    });
  }

  /** Marks a chunk's document removed; `terms` (what it held) takes it out of the counts. */
  remove(rowid: number, terms: Uint8Array | undefined): void {
    const doc = rowid < this.docOf.length ? this.docOf[rowid]! - 1 : -1;
    if (doc < 0) return;
    this.docOf[rowid] = 0;
    this.deleted[doc] = 1;
    this.deletedCount += 1;
    const audience = this.channels.audience(this.channelOfDoc[doc]!);
    if (audience < 0) return;
    const c = this.countsOf(audience);
    c.chunks -= 1;
    c.tokens -= this.lengths[doc]!;
    if (terms) {
      SearchDocs.decode(terms, (termId) => addDf(c, termId, -1));
    } else {
      // Replaced in place without its old terms at hand: count again from the postings.
      this.pendingRecount = true;
    }
  }

  /** After a batch of changes: counts again when channels moved audience or a document was replaced in place. */
  settle(audiencesMoved: boolean): void {
    if (audiencesMoved || this.pendingRecount) this.recount();
    this.pendingRecount = false;
  }

  /**
   * Builds everything from `search_docs` rows in two passes: count each term's postings, then fill lists allocated to
   * size. Channels are numbered afresh, with the audiences given.
   */
  fill(rows: StoredDoc[], audiences: Map<string, Audiences.Audience>): void {
    this.docCount = 0;
    this.deletedCount = 0;
    this.postingCount = 0;
    this.counts = [];
    this.channels.clear();
    this.channels.take(audiences);
    const size = Math.max(1024, rows.length);
    this.rowids = new Int32Array(size);
    this.lengths = new Int32Array(size);
    this.channelOfDoc = new Int32Array(size);
    this.deleted = new Uint8Array(size);
    this.docOf = new Int32Array(Math.max(1024, (rows.at(-1)?.rowid ?? 0) + 1));
    let listSizes = new Int32Array(1024);
    for (const row of rows) {
      const doc = this.docCount++;
      this.rowids[doc] = row.rowid;
      this.lengths[doc] = row.length;
      this.docOf[row.rowid] = doc + 1;
      const channel = this.channels.number(row.channelId);
      this.channelOfDoc[doc] = channel;
      const audience = this.channels.audience(channel);
      const c = audience >= 0 ? this.countsOf(audience) : undefined;
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
    const postings = Array.from(listSizes, (n) => (n > 0 ? new PostingList(n + (n >> 3) + 4) : undefined));
    this.postings = postings;
    rows.forEach((row, doc) =>
      SearchDocs.decode(row.terms, (termId, count) => {
        const list = postings[termId]!;
        list.docs[list.length] = doc;
        list.counts[list.length] = count;
        list.length += 1;
      }),
    );
    this.postingCount = listSizes.reduce((n, x) => n + x, 0);
  }

  /** What the index holds: live chunks, terms with a posting list, postings (those of removed chunks included). */
  size(): { chunks: number; terms: number; postings: number } {
    return { chunks: this.docCount - this.deletedCount, terms: this.postings.reduce((n, l) => n + (l ? 1 : 0), 0), postings: this.postingCount };
  }

  /** Counts every live document again, by audience: after channels change audience. */
  private recount(): void {
    this.counts = [];
    const { deleted, channelOfDoc, lengths } = this;
    for (let doc = 0; doc < this.docCount; doc++) {
      if (deleted[doc]) continue;
      const audience = this.channels.audience(channelOfDoc[doc]!);
      if (audience < 0) continue;
      const c = this.countsOf(audience);
      c.chunks += 1;
      c.tokens += lengths[doc]!;
    }
    this.postings.forEach((list, termId) => {
      if (!list) return;
      for (let p = 0; p < list.length; p++) {
        const doc = list.docs[p]!;
        if (deleted[doc]) continue;
        const audience = this.channels.audience(channelOfDoc[doc]!);
        if (audience >= 0) addDf(this.countsOf(audience), termId, 1);
      }
    });
  }
}
