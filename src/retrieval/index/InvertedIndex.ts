import * as SearchDocs from '../../store/SearchDocs.js';
import type { StoredDoc } from '../../store/SearchDocs.js';
import * as Audiences from './Audiences.js';
import { PostingList, Sizer } from './Postings.js';

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

/**
 * The array, or a copy twice as long (at least `need`) in shared memory: a search thread reads the document arrays
 * where they lie (SearchShards), never a copy.
 */
function grow<T extends Int32Array | Uint8Array>(array: T, need: number): T {
  if (need <= array.length) return array;
  const Type = array.constructor as { new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number };
  const next = new Type(new SharedArrayBuffer(Math.max(need, array.length * 2) * Type.BYTES_PER_ELEMENT));
  next.set(array);
  return next;
}

/** An index's arrays and counts, as a snapshot keeps them. */
export type IndexState = {
  rowids: Int32Array<ArrayBuffer>;
  lengths: Int32Array<ArrayBuffer>;
  channelOfDoc: Int32Array<ArrayBuffer>;
  deleted: Uint8Array<ArrayBuffer>;
  postings: (PostingList | undefined)[];
  postingCount: number;
  /** Each channel and its audience, in the order of the channels' numbers. */
  channels: [string, Audiences.Audience][];
  /** Each audience's counts, by its name. */
  counts: (Counts & { audience: Audiences.Audience })[];
};

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
   * An index built from `search_docs` rows as they are read, page by page: the rows' terms are kept in one buffer
   * (not an object a row), a first pass counts each list's postings and the bytes its sealed blocks take, and a
   * second fills lists made to size, so building copies no list and leaves little behind. Channels are numbered
   * afresh, with the audiences given.
   */
  static build(audiences: Map<string, Audiences.Audience>): { append(rows: StoredDoc[]): void; finish(): InvertedIndex } {
    const index = new InvertedIndex();
    index.channels.take(audiences);
    let terms = new Uint8Array(1 << 16);
    let used = 0;
    let ends = new Int32Array(1024);
    return {
      append: (rows) => {
        for (const row of rows) {
          const doc = index.docCount++;
          index.rowids = grow(index.rowids, index.docCount);
          index.lengths = grow(index.lengths, index.docCount);
          index.channelOfDoc = grow(index.channelOfDoc, index.docCount);
          index.deleted = grow(index.deleted, index.docCount);
          index.docOf = grow(index.docOf, row.rowid + 1);
          index.rowids[doc] = row.rowid;
          index.lengths[doc] = row.length;
          index.docOf[row.rowid] = doc + 1;
          index.channelOfDoc[doc] = index.channels.number(row.channelId);
          if (used + row.terms.length > terms.length) {
            const more = new Uint8Array(Math.max(used + row.terms.length, Math.ceil(terms.length * 1.5)));
            more.set(terms.subarray(0, used));
            terms = more;
          }
          terms.set(row.terms, used);
          used += row.terms.length;
          ends = grow(ends, index.docCount);
          ends[doc] = used;
        }
      },
      finish: () => {
        const sizer = new Sizer();
        const termsOf = (doc: number) => terms.subarray(doc === 0 ? 0 : ends[doc - 1]!, ends[doc]!);
        for (let doc = 0; doc < index.docCount; doc++) {
          const audience = index.channels.audience(index.channelOfDoc[doc]!);
          const c = audience >= 0 ? index.countsOf(audience) : undefined;
          if (c) {
            c.chunks += 1;
            c.tokens += index.lengths[doc]!;
          }
          SearchDocs.decode(termsOf(doc), (termId, count) => {
            sizer.add(termId, doc, count);
            if (c) addDf(c, termId, 1);
          });
        }
        const postings = Array.from(sizer.postings, (n, termId) => (n > 0 ? new PostingList(n, sizer.sealedBytes(termId)) : undefined));
        while (postings.length > 0 && postings.at(-1) === undefined) postings.pop();
        index.postings = postings;
        for (let doc = 0; doc < index.docCount; doc++) SearchDocs.decode(termsOf(doc), (termId, count) => postings[termId]!.push(doc, count));
        for (const list of postings) list?.trim();
        index.postingCount = sizer.postings.reduce((n, x) => n + x, 0);
        return index;
      },
    };
  }

  /** Everything the index holds, as views as long as what they hold (not copies): what a snapshot writes. */
  state(): IndexState {
    if (this.pendingRecount) this.settle(false);
    const n = this.docCount;
    return {
      rowids: this.rowids.subarray(0, n),
      lengths: this.lengths.subarray(0, n),
      channelOfDoc: this.channelOfDoc.subarray(0, n),
      deleted: this.deleted.subarray(0, n),
      postings: this.postings,
      postingCount: this.postingCount,
      channels: this.channels.entries(),
      counts: this.counts.map((c, audience) => ({ audience: this.channels.audienceName(audience), ...c })),
    };
  }

  /**
   * An index over a snapshot's arrays (kept as they are: an array a later change outgrows is copied then). Throws
   * when they disagree with each other: a snapshot that reads so is refused, never searched.
   */
  static restore(state: IndexState): InvertedIndex {
    const index = new InvertedIndex();
    const n = state.rowids.length;
    if (state.lengths.length !== n || state.channelOfDoc.length !== n || state.deleted.length !== n) throw new Error('document arrays of different lengths');
    for (const [id] of state.channels) index.channels.number(id);
    if (index.channels.size !== state.channels.length) throw new Error('a channel named twice');
    index.channels.take(new Map(state.channels));
    let largest = 0;
    for (let doc = 0; doc < n; doc++) {
      const channel = state.channelOfDoc[doc]!;
      if (channel < 0 || channel >= state.channels.length || state.rowids[doc]! <= 0) throw new Error(`document ${doc} names no channel or chunk`);
      largest = Math.max(largest, state.rowids[doc]!);
    }
    index.docOf = new Int32Array(largest + 1);
    let deletedCount = 0;
    for (let doc = 0; doc < n; doc++) {
      if (state.deleted[doc]) {
        deletedCount += 1;
        continue;
      }
      const rowid = state.rowids[doc]!;
      if (index.docOf[rowid]! > 0) throw new Error(`chunk ${rowid} indexed twice`);
      index.docOf[rowid] = doc + 1;
    }
    index.rowids = state.rowids;
    index.lengths = state.lengths;
    index.channelOfDoc = state.channelOfDoc;
    index.deleted = state.deleted;
    index.docCount = n;
    index.deletedCount = deletedCount;
    index.postings = state.postings;
    index.postingCount = state.postingCount;
    for (const { audience, ...counts } of state.counts) {
      const number = index.channels.audienceNumber(audience);
      if (number < 0) continue;
      while (index.counts.length <= number) index.countsOf(index.counts.length);
      index.counts[number] = counts;
    }
    return index;
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
    this.postings.forEach((list, termId) =>
      list?.forEach((doc) => {
        if (deleted[doc]) return;
        const audience = this.channels.audience(channelOfDoc[doc]!);
        if (audience >= 0) addDf(this.countsOf(audience), termId, 1);
      }),
    );
  }
}
