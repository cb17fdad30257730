/**
 * One term's posting list, in memory: the documents that hold it (ascending internal document numbers) with the
 * term's weighted count in each, and the most a posting of it can add to a BM25 score.
 *
 * Postings are kept in blocks of 128. A full block is sealed: its first document is kept apart, and the gaps between
 * its documents and its counts are written in as few whole bytes as the block's largest needs (a byte at its head says
 * how many), two to three bytes a posting where plain arrays take six, unpacked by loops without a branch a byte. The
 * last block stays open, in plain arrays, so a chunk written later is appended at no cost. Readers go through a
 * `Cursor`, which unpacks one block at a time, or a `Probe`, which looks documents up without unpacking.
 */

/** A list as a snapshot keeps it: its sealed blocks' firsts, offsets and bytes, its open block, and its bound. */
export type ListParts = {
  length: number;
  firsts: Int32Array;
  offsets: Int32Array;
  bytes: Uint8Array;
  tailDocs: Int32Array;
  tailCounts: Uint16Array;
  bound: number;
  boundAverage: number;
  covered: number;
};

/** A list's arrays as a reader takes them (see `PostingList.later`). */
export type PostingSegments = {
  firsts: Int32Array;
  offsets: Int32Array;
  bytes: Uint8Array;
  later: Uint8Array;
  base: number;
  tailDocs: Int32Array;
  tailCounts: Uint16Array;
};

/** A list's arrays and length, as a search in another thread takes them. */
export type ListView = PostingSegments & { length: number };

const shift = 7;
/** Postings per block. */
export const blockLength = 1 << shift;

export class PostingList {
  length = 0;
  /** Sealed blocks: each one's first document, and where its bytes start. */
  private firsts: Int32Array | undefined;
  private offsets: Int32Array | undefined;
  private bytes: Uint8Array | undefined;
  private used = 0;
  /**
   * Blocks sealed after the list was fitted (`trim`) or restored from a snapshot, in memory of their own: growing
   * `bytes` would copy the whole list, and right after a load every list stands at the end of its room, so the first
   * writes would copy most of the index (1.7 s at 4M chunks). An offset from `base` on is one into `later`.
   */
  private later: Uint8Array | undefined;
  private laterUsed = 0;
  private base = Infinity;
  private sealed = 0;
  /** The open block, plain. */
  private tailDocs: Int32Array;
  private tailCounts: Uint16Array;
  private tailLength = 0;

  /**
   * `expected`: how many postings the list will hold, and `sealedBytes` what its sealed blocks will take (`Sizer`):
   * given both, filling the list copies none of its sealed bytes, and `trim` then fits its open block.
   */
  constructor(expected = 2, sealedBytes?: number) {
    const sealed = expected > 0 ? Math.floor((expected - 1) / blockLength) : 0;
    // A list that will seal blocks fills a whole open block first; `trim` fits the last one.
    this.tailDocs = new Int32Array(Math.max(1, Math.min(expected, blockLength)));
    this.tailCounts = new Uint16Array(this.tailDocs.length);
    if (sealed > 0) {
      // In shared memory, as everything a list grows into: a list built from rows is searched where it lies.
      this.firsts = new Int32Array(new SharedArrayBuffer(4 * sealed));
      this.offsets = new Int32Array(new SharedArrayBuffer(4 * sealed));
      this.bytes = sharedBytes(sealedBytes ?? expected * 3);
    }
  }

  /** Appends a posting; `doc` must be above every document already in the list. */
  push(doc: number, count: number): void {
    if (this.tailLength === this.tailDocs.length) {
      if (this.tailLength === blockLength) this.seal();
      else {
        // Growing by half up to a block: a long list's spare room is memory held by every term.
        const capacity = Math.min(blockLength, Math.ceil(this.tailDocs.length * 1.5) + 4);
        const docs = new Int32Array(capacity);
        docs.set(this.tailDocs);
        const counts = new Uint16Array(capacity);
        counts.set(this.tailCounts);
        this.tailDocs = docs;
        this.tailCounts = counts;
      }
    }
    this.tailDocs[this.tailLength] = doc;
    this.tailCounts[this.tailLength] = count;
    this.tailLength += 1;
    this.length += 1;
  }

  /** Gives back the room kept for growth: after a list is filled whole. */
  trim(): void {
    if (this.bytes && this.used < this.bytes.length) this.bytes = this.bytes.slice(0, this.used);
    if (this.base === Infinity) this.base = this.used;
    if (this.firsts && this.sealed < this.firsts.length) {
      this.firsts = this.firsts.slice(0, this.sealed);
      this.offsets = this.offsets!.slice(0, this.sealed);
    }
    if (this.tailLength < this.tailDocs.length && this.tailLength > 0) {
      this.tailDocs = this.tailDocs.slice(0, this.tailLength);
      this.tailCounts = this.tailCounts.slice(0, this.tailLength);
    }
  }

  /** Bytes the list holds in memory (its arrays). */
  byteSize(): number {
    return (this.bytes?.byteLength ?? 0) + (this.later?.byteLength ?? 0) + (this.firsts?.byteLength ?? 0) * 2 + this.tailDocs.byteLength + this.tailCounts.byteLength;
  }

  /** How many blocks, the open one included. */
  get blocks(): number {
    return this.sealed + (this.tailLength > 0 ? 1 : 0);
  }

  /** The first document of a block. */
  first(block: number): number {
    return block < this.sealed ? this.firsts![block]! : this.tailDocs[0]!;
  }

  /** Unpacks a block into `docs` and `counts`; returns how many postings it holds. */
  decode(block: number, docs: Int32Array, counts: Uint16Array): number {
    if (block >= this.sealed) {
      docs.set(this.tailDocs.subarray(0, this.tailLength));
      counts.set(this.tailCounts.subarray(0, this.tailLength));
      return this.tailLength;
    }
    let at = this.offsets![block]!;
    const bytes = at < this.base ? this.bytes! : this.later!;
    if (at >= this.base) at -= this.base;
    const head = bytes[at++]!;
    const gapWidth = head & 0x0f;
    const countWidth = head >> 4;
    let doc = this.firsts![block]!;
    docs[0] = doc;
    if (gapWidth === 1) {
      for (let i = 1; i < blockLength; i++) docs[i] = doc += bytes[at++]!;
    } else if (gapWidth === 2) {
      for (let i = 1; i < blockLength; i++, at += 2) docs[i] = doc += bytes[at]! | (bytes[at + 1]! << 8);
    } else {
      for (let i = 1; i < blockLength; i++) {
        let gap = 0;
        for (let k = 0; k < gapWidth; k++) gap |= bytes[at++]! << (8 * k);
        docs[i] = doc += gap >>> 0;
      }
    }
    if (countWidth === 1) {
      for (let i = 0; i < blockLength; i++) counts[i] = bytes[at++]!;
    } else {
      for (let i = 0; i < blockLength; i++, at += 2) counts[i] = bytes[at]! | (bytes[at + 1]! << 8);
    }
    return blockLength;
  }

  /** The largest tf·(k1+1)/(tf + k1·(1-b+b·len/avgdl)) at `boundAverage`, over the first `covered` postings. */
  private listBound = 0;
  private boundAverage = 0;
  private covered = 0;

  /**
   * The most any posting of the list adds to a BM25 score before its IDF, for this average length: the exact maximum
   * kept from an earlier average and scaled (a longer average lowers length normalization by at most its ratio), so
   * the bound is tight yet costs a pass over the list only when the average has moved more than 1%.
   */
  bound(scoring: { k1: number; b: number; averageLength: number; docLength: Int32Array }): number {
    const { k1, b, averageLength, docLength } = scoring;
    if (this.covered === 0 || Math.abs(averageLength / this.boundAverage - 1) > 0.01) {
      this.boundAverage = averageLength;
      this.covered = 0;
      this.listBound = 0;
    }
    if (this.covered < this.length) {
      const norm0 = k1 * (1 - b);
      const norm1 = (k1 * b) / this.boundAverage;
      const cursor = new Cursor(this);
      for (let p = this.covered; p < this.length; ) {
        cursor.load(p);
        const { docs, counts, start, count } = cursor;
        for (let q = p - start; q < count; q++) {
          const tf = counts[q]!;
          // Rounded up past float32 and summation error: a bound may be loose, never low.
          const w = ((tf * (k1 + 1)) / (tf + norm0 + norm1 * docLength[docs[q]!]!)) * (1 + 1e-6);
          if (w > this.listBound) this.listBound = w;
        }
        p = start + count;
      }
      this.covered = this.length;
    }
    return this.listBound * Math.max(1, averageLength / this.boundAverage);
  }

  /**
   * The list's arrays, as long as what they hold, and its bound: what a snapshot keeps of it. Blocks sealed since a
   * load follow the others in `bytes` (a copy then; offsets already count from the start of the first part).
   */
  parts(): ListParts {
    const own = this.bytes?.subarray(0, this.used) ?? new Uint8Array(0);
    let bytes = own;
    if (this.later && this.laterUsed > 0) {
      bytes = new Uint8Array(own.length + this.laterUsed);
      bytes.set(own);
      bytes.set(this.later.subarray(0, this.laterUsed), own.length);
    }
    return {
      length: this.length,
      firsts: this.firsts?.subarray(0, this.sealed) ?? new Int32Array(0),
      offsets: this.offsets?.subarray(0, this.sealed) ?? new Int32Array(0),
      bytes,
      tailDocs: this.tailDocs.subarray(0, this.tailLength),
      tailCounts: this.tailCounts.subarray(0, this.tailLength),
      bound: this.listBound,
      boundAverage: this.boundAverage,
      covered: this.covered,
    };
  }

  /** The arrays as they are, for a `Probe`: blocks at offsets from `base` on lie in `later`. */
  segments(): PostingSegments {
    return {
      firsts: this.firsts?.subarray(0, this.sealed) ?? new Int32Array(0),
      offsets: this.offsets?.subarray(0, this.sealed) ?? new Int32Array(0),
      bytes: this.bytes ?? new Uint8Array(0),
      later: this.later ?? new Uint8Array(0),
      base: this.base,
      tailDocs: this.tailDocs.subarray(0, this.tailLength),
      tailCounts: this.tailCounts.subarray(0, this.tailLength),
    };
  }

  /** The list as a search in another thread reads it: its arrays as they are, and its length. */
  view(): ListView {
    return { ...this.segments(), length: this.length };
  }

  /** A list to read over another list's `view` (in another thread): never written to. */
  static over(view: ListView): PostingList {
    const list = PostingList.restore({ ...view, bound: 0, boundAverage: 0, covered: 0 });
    list.later = view.later;
    list.base = view.base;
    return list;
  }

  /**
   * A list over arrays a snapshot held (views into its bytes, not copied). Each is exactly as long as what it holds:
   * a posting added later writes only into the list's own slice of those bytes (its open block, once sealed), and an
   * array it outgrows is copied to memory of its own. The snapshot's bytes are the index's from then on.
   */
  static restore(parts: ListParts): PostingList {
    const list = new PostingList(0);
    const sealed = parts.firsts.length;
    if (parts.offsets.length !== sealed || parts.tailDocs.length !== parts.tailCounts.length || parts.length !== sealed * blockLength + parts.tailDocs.length) {
      throw new Error('a posting list whose parts disagree on its length');
    }
    list.length = parts.length;
    list.sealed = sealed;
    if (sealed > 0) {
      list.firsts = parts.firsts;
      list.offsets = parts.offsets;
      list.bytes = parts.bytes;
      list.used = parts.bytes.length;
      list.base = parts.bytes.length;
    }
    list.tailDocs = parts.tailDocs;
    list.tailCounts = parts.tailCounts;
    list.tailLength = parts.tailDocs.length;
    list.listBound = parts.bound;
    list.boundAverage = parts.boundAverage;
    list.covered = parts.covered;
    return list;
  }

  /** Every posting, in order. */
  forEach(visit: (doc: number, count: number) => void): void {
    const cursor = new Cursor(this);
    for (let p = 0; p < this.length; ) {
      cursor.load(p);
      for (let q = 0; q < cursor.count; q++) visit(cursor.docs[q]!, cursor.counts[q]!);
      p = cursor.start + cursor.count;
    }
  }

  /** Writes the full open block as a sealed one. */
  private seal(): void {
    if (!this.firsts || this.sealed === this.firsts.length) {
      this.firsts = grow(this.firsts, Math.ceil(this.sealed * 1.25) + 2);
      this.offsets = grow(this.offsets, this.firsts.length);
    }
    const docs = this.tailDocs;
    const counts = this.tailCounts;
    const size = blockBytes(docs, counts, blockLength);
    let bytes: Uint8Array;
    let at: number;
    if (this.base !== Infinity) {
      // Fitted or restored: the block goes after the others, in `later`.
      if (!this.later || this.later.length - this.laterUsed < size) {
        const later = sharedBytes(Math.max(this.laterUsed + size, Math.ceil((this.later?.length ?? 0) * 1.5), 4 * size));
        if (this.later) later.set(this.later.subarray(0, this.laterUsed));
        this.later = later;
      }
      bytes = this.later;
      at = this.laterUsed;
      this.offsets![this.sealed] = this.base + at;
    } else {
      // Sized only near the end of the room: a block takes at most 4 bytes a gap and 2 a count, and its head.
      const roomy = this.bytes !== undefined && this.bytes.length - this.used >= blockLength * 6 + 1;
      if (!roomy && (!this.bytes || this.bytes.length < this.used + size)) {
        const grown = sharedBytes(Math.max(this.used + size, Math.ceil((this.bytes?.length ?? 0) * 1.25)));
        if (this.bytes) grown.set(this.bytes.subarray(0, this.used));
        this.bytes = grown;
      }
      bytes = this.bytes!;
      at = this.used;
      this.offsets![this.sealed] = at;
    }
    this.firsts[this.sealed] = docs[0]!;
    const { gapWidth, countWidth } = widths(docs, counts, blockLength);
    bytes[at++] = gapWidth | (countWidth << 4);
    for (let i = 1; i < blockLength; i++) {
      const gap = docs[i]! - docs[i - 1]!;
      for (let k = 0; k < gapWidth; k++) bytes[at++] = (gap >>> (8 * k)) & 0xff;
    }
    for (let i = 0; i < blockLength; i++) {
      const count = counts[i]!;
      bytes[at++] = count & 0xff;
      if (countWidth === 2) bytes[at++] = count >>> 8;
    }
    if (this.base !== Infinity) this.laterUsed = at;
    else this.used = at;
    this.sealed += 1;
    this.tailLength = 0;
  }
}

/** Whole bytes a gap of a block takes (documents are below 2^31). */
const gapBytes = (gap: number): number => (gap < 0x100 ? 1 : gap < 0x10000 ? 2 : gap < 0x1000000 ? 3 : 4);
/** Bytes a sealed block takes, given its largest gap and count. */
const sealedSize = (largestGap: number, largestCount: number): number => 1 + (blockLength - 1) * gapBytes(largestGap) + blockLength * (largestCount < 0x100 ? 1 : 2);

/** The widths a block's gaps and counts are written in. */
function widths(docs: Int32Array, counts: Uint16Array, n: number): { gapWidth: number; countWidth: number } {
  let gap = 0;
  let count = counts[0]!;
  for (let i = 1; i < n; i++) {
    gap = Math.max(gap, docs[i]! - docs[i - 1]!);
    count = Math.max(count, counts[i]!);
  }
  return { gapWidth: gapBytes(gap), countWidth: count < 0x100 ? 1 : 2 };
}

/** Bytes a full block of these postings takes sealed. */
function blockBytes(docs: Int32Array, counts: Uint16Array, n: number): number {
  const { gapWidth, countWidth } = widths(docs, counts, n);
  return 1 + (n - 1) * gapWidth + n * countWidth;
}

/**
 * What each list of an index being built will take, postings seen one at a time in document order: their number, and
 * the bytes of the blocks that will be sealed (every full block but a last one, which stays open).
 */
export class Sizer {
  postings = new Int32Array(1024);
  private lastDoc = new Int32Array(1024);
  private largestGap = new Int32Array(1024);
  private largestCount = new Int32Array(1024);
  private completed = new Float64Array(1024);
  private lastCompleted = new Int32Array(1024);

  add(term: number, doc: number, count: number): void {
    if (term >= this.postings.length) this.grow(term + 1);
    const n = this.postings[term]!;
    if (n % blockLength === 0) {
      this.largestGap[term] = 0;
      this.largestCount[term] = count;
    } else {
      this.largestGap[term] = Math.max(this.largestGap[term]!, doc - this.lastDoc[term]!);
      this.largestCount[term] = Math.max(this.largestCount[term]!, count);
    }
    this.lastDoc[term] = doc;
    this.postings[term] = n + 1;
    if ((n + 1) % blockLength === 0) {
      const size = sealedSize(this.largestGap[term]!, this.largestCount[term]!);
      this.completed[term]! += size;
      this.lastCompleted[term] = size;
    }
  }

  /** The bytes a term's sealed blocks take: a last full block stays open. */
  sealedBytes(term: number): number {
    const n = this.postings[term]!;
    return this.completed[term]! - (n > 0 && n % blockLength === 0 ? this.lastCompleted[term]! : 0);
  }

  private grow(need: number): void {
    const size = Math.max(need, this.postings.length * 2);
    const more = <T extends Int32Array | Float64Array>(a: T): T => {
      const next = new (a.constructor as new (n: number) => T)(size);
      next.set(a);
      return next;
    };
    this.postings = more(this.postings);
    this.lastDoc = more(this.lastDoc);
    this.largestGap = more(this.largestGap);
    this.largestCount = more(this.largestCount);
    this.completed = more(this.completed);
    this.lastCompleted = more(this.lastCompleted);
  }
}

/**
 * Memory a list's sealed blocks grow into, shared: a search thread reads it where it lies (SearchShards), where an
 * array of the thread's own would be copied into every question's message.
 */
const sharedBytes = (n: number) => new Uint8Array(new SharedArrayBuffer(n));

function grow(array: Int32Array | undefined, need: number): Int32Array {
  if (array && array.length >= need) return array;
  const next = new Int32Array(new SharedArrayBuffer(4 * need));
  if (array) next.set(array);
  return next;
}

/**
 * The last of a list's first `blocks` blocks, from `low` on (whose first document is at most the target), whose first
 * document is at most `target`: galloping over blocks, then bisecting.
 */
function lastBlockFrom(list: PostingList, low: number, blocks: number, target: number): number {
  let step = 1;
  let high = low + 1;
  while (high < blocks && list.first(high) <= target) {
    low = high;
    step *= 2;
    high = low + step;
  }
  if (high > blocks) high = blocks;
  while (high - low > 1) {
    const mid = (low + high) >>> 1;
    if (list.first(mid) <= target) low = mid;
    else high = mid;
  }
  return low;
}

/**
 * A reader of one list: holds one unpacked block (`docs`, `counts`: `count` postings from position `start`). Made per
 * search; a list written to after the cursor was made is read as it was.
 */
export class Cursor {
  block = -1;
  start = 0;
  count = 0;
  readonly docs = new Int32Array(blockLength);
  readonly counts = new Uint16Array(blockLength);
  readonly length: number;

  constructor(readonly list: PostingList) {
    this.length = list.length;
  }

  /** Unpacks the block holding position `p` (below `length`). */
  load(p: number): void {
    const block = p >> shift;
    if (block === this.block) return;
    this.count = this.list.decode(block, this.docs, this.counts);
    this.block = block;
    this.start = block << shift;
  }

  doc(p: number): number {
    this.load(p);
    return this.docs[p - this.start]!;
  }

  /** The position of the list's first document at or after `target` (`length` when there is none). */
  seek(target: number): number {
    const blocks = Math.ceil(this.length / blockLength);
    if (blocks === 0 || this.list.first(0) >= target) return 0;
    this.load(lastBlockFrom(this.list, 0, blocks, target) << shift);
    let q = 0;
    while (q < this.count && this.docs[q]! < target) q++;
    return this.start + q;
  }

  /** The first `n` documents. */
  firstDocs(n: number): Int32Array {
    const out = new Int32Array(Math.min(n, this.length));
    for (let p = 0; p < out.length; p++) out[p] = this.doc(p);
    return out;
  }
}

/**
 * A forward-only lookup in one list: the count of each document asked, asked in ascending order, read straight from
 * the packed bytes. It skips blocks by their first documents and walks a block's gaps only as far as the document
 * asked, reading the one count it needs: looking up a few documents of a long list unpacks nothing. Made per search,
 * like a `Cursor`.
 */
export class Probe {
  private readonly firsts: Int32Array;
  private readonly offsets: Int32Array;
  private readonly segments: PostingSegments;
  /** The bytes of the block being walked. */
  private bytes: Uint8Array = new Uint8Array(0);
  private readonly tailDocs: Int32Array;
  private readonly tailCounts: Uint16Array;
  private readonly sealed: number;
  private readonly blocks: number;
  /** The block being walked (-1 before the first), the index in it and document there, and where the next gap lies. */
  private block = -1;
  private index = 0;
  private doc = 0;
  private at = 0;
  private gapWidth = 0;
  private countWidth = 0;
  /** Where the block's counts start. */
  private countsAt = 0;

  constructor(private readonly list: PostingList) {
    const parts = list.segments();
    this.segments = parts;
    this.firsts = parts.firsts;
    this.offsets = parts.offsets;
    this.tailDocs = parts.tailDocs;
    this.tailCounts = parts.tailCounts;
    this.sealed = parts.firsts.length;
    this.blocks = this.sealed + (parts.tailDocs.length > 0 ? 1 : 0);
  }

  /** The count of `target` in the list, 0 when the list does not hold it. Each target must be above the last asked. */
  countOf(target: number): number {
    const blocks = this.blocks;
    let block = this.block;
    if (block < 0 || (block + 1 < blocks && this.list.first(block + 1) <= target)) {
      const low = block < 0 ? 0 : block + 1;
      if (low >= blocks || this.list.first(low) > target) return 0;
      this.enter((block = lastBlockFrom(this.list, low, blocks, target)));
    }
    if (block < this.sealed) {
      const bytes = this.bytes;
      let doc = this.doc;
      let index = this.index;
      let at = this.at;
      const gapWidth = this.gapWidth;
      if (gapWidth === 1) {
        while (doc < target && index < blockLength - 1) {
          doc += bytes[at++]!;
          index++;
        }
      } else if (gapWidth === 2) {
        while (doc < target && index < blockLength - 1) {
          doc += bytes[at]! | (bytes[at + 1]! << 8);
          at += 2;
          index++;
        }
      } else {
        while (doc < target && index < blockLength - 1) {
          let gap = 0;
          for (let k = 0; k < gapWidth; k++) gap |= bytes[at++]! << (8 * k);
          doc += gap >>> 0;
          index++;
        }
      }
      this.doc = doc;
      this.index = index;
      this.at = at;
      if (doc !== target) return 0;
      const c = this.countsAt + index * this.countWidth;
      return this.countWidth === 1 ? bytes[c]! : bytes[c]! | (bytes[c + 1]! << 8);
    }
    const docs = this.tailDocs;
    let index = this.index;
    while (index < docs.length && docs[index]! < target) index++;
    this.index = index;
    return index < docs.length && docs[index] === target ? this.tailCounts[index]! : 0;
  }

  /** Starts walking a block from its first document. */
  private enter(block: number): void {
    this.block = block;
    this.index = 0;
    if (block >= this.sealed) return;
    const { bytes, later, base } = this.segments;
    let at = this.offsets[block]!;
    this.bytes = at < base ? bytes : later;
    if (at >= base) at -= base;
    const head = this.bytes[at]!;
    this.gapWidth = head & 0x0f;
    this.countWidth = head >> 4;
    this.doc = this.firsts[block]!;
    this.at = at + 1;
    this.countsAt = at + 1 + (blockLength - 1) * this.gapWidth;
  }
}
