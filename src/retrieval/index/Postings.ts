/**
 * One term's posting list, in memory: the documents that hold it (ascending internal document numbers) with the
 * term's weighted count in each, and the most a posting of it can add to a BM25 score.
 */

export class PostingList {
  docs: Int32Array;
  counts: Uint16Array;
  length = 0;

  constructor(capacity = 2) {
    this.docs = new Int32Array(Math.max(1, capacity));
    this.counts = new Uint16Array(Math.max(1, capacity));
  }

  /** Appends a posting; `doc` must be above every document already in the list. */
  push(doc: number, count: number): void {
    if (this.length === this.docs.length) {
      // Growing by half: a long list's spare room is memory held by every term.
      const capacity = Math.ceil(this.docs.length * 1.5) + 4;
      const docs = new Int32Array(capacity);
      docs.set(this.docs);
      const counts = new Uint16Array(capacity);
      counts.set(this.counts);
      this.docs = docs;
      this.counts = counts;
    }
    this.docs[this.length] = doc;
    this.counts[this.length] = count;
    this.length += 1;
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
      for (let p = this.covered; p < this.length; p++) {
        const count = this.counts[p]!;
        // Rounded up past float32 and summation error: a bound may be loose, never low.
        const w = ((count * (k1 + 1)) / (count + norm0 + norm1 * docLength[this.docs[p]!]!)) * (1 + 1e-6);
        if (w > this.listBound) this.listBound = w;
      }
      this.covered = this.length;
    }
    return this.listBound * this.boundScale(averageLength);
  }

  /** What the bound kept for an earlier average is multiplied by for this one. */
  private boundScale(averageLength: number): number {
    return Math.max(1, averageLength / this.boundAverage);
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
