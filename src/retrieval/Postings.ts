/**
 * One term's posting list, in memory: the documents that hold it (ascending internal document numbers) with the
 * term's weighted count in each, and per block of `blockSize` postings the largest count and the shortest document:
 * together they bound the BM25 contribution of any posting in the block for any collection statistics.
 */

export const blockSize = 128;

export class PostingList {
  docs: Int32Array;
  counts: Uint16Array;
  length = 0;
  blockMaxCount: Uint16Array;
  blockMinLength: Int32Array;

  constructor(capacity = 2) {
    this.docs = new Int32Array(capacity);
    this.counts = new Uint16Array(capacity);
    this.blockMaxCount = new Uint16Array(1);
    this.blockMinLength = new Int32Array(1);
  }

  /** Appends a posting; `doc` must be above every document already in the list. */
  push(doc: number, count: number, docLength: number): void {
    if (this.length === this.docs.length) {
      const capacity = this.docs.length * 2;
      const docs = new Int32Array(capacity);
      docs.set(this.docs);
      const counts = new Uint16Array(capacity);
      counts.set(this.counts);
      this.docs = docs;
      this.counts = counts;
    }
    const block = Math.floor(this.length / blockSize);
    if (block === this.blockMaxCount.length) {
      const maxCount = new Uint16Array(block * 2);
      maxCount.set(this.blockMaxCount);
      const minLength = new Int32Array(block * 2);
      minLength.set(this.blockMinLength);
      this.blockMaxCount = maxCount;
      this.blockMinLength = minLength;
    }
    if (this.length % blockSize === 0) {
      this.blockMaxCount[block] = count;
      this.blockMinLength[block] = docLength;
    } else {
      if (count > this.blockMaxCount[block]!) this.blockMaxCount[block] = count;
      if (docLength < this.blockMinLength[block]!) this.blockMinLength[block] = docLength;
    }
    this.docs[this.length] = doc;
    this.counts[this.length] = count;
    this.length += 1;
  }

  get blocks(): number {
    return Math.ceil(this.length / blockSize);
  }

  /** The first position at or after `from` whose document is at least `target` (`length` when none is). */
  seek(from: number, target: number): number {
    const docs = this.docs;
    const n = this.length;
    if (from >= n || docs[from]! >= target) return from;
    // Gallop, then bisect: skips are short between nearby candidates and long across sparse stretches.
    let low = from;
    let step = 1;
    let high = from + 1;
    while (high < n && docs[high]! < target) {
      low = high;
      step *= 2;
      high = low + step;
    }
    if (high > n) high = n;
    // docs[low] < target; find the first index in (low, high] with docs >= target.
    let lo = low + 1;
    let hi = high;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (docs[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
