/** Counts of unordered pairs of small integers, in open addressing over typed arrays (a large corpus has too many pairs for Maps). */
export class PairCounts {
  private first = new Int32Array(1 << 16).fill(-1);
  private second = new Int32Array(1 << 16);
  private counts = new Uint32Array(1 << 16);
  private size = 0;

  add(x: number, y: number): void {
    const a = Math.min(x, y);
    const b = Math.max(x, y);
    const mask = this.first.length - 1;
    let h = PairCounts.hash(a, b) & mask;
    while (this.first[h] !== -1) {
      if (this.first[h] === a && this.second[h] === b) {
        this.counts[h]! += 1;
        return;
      }
      h = (h + 1) & mask;
    }
    this.first[h] = a;
    this.second[h] = b;
    this.counts[h] = 1;
    this.size += 1;
    if (this.size * 10 > this.first.length * 7) this.grow();
  }

  forEach(fn: (a: number, b: number, count: number) => void): void {
    for (let h = 0; h < this.first.length; h++) if (this.first[h] !== -1) fn(this.first[h]!, this.second[h]!, this.counts[h]!);
  }

  private static hash(a: number, b: number): number {
    let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x632be5ab, 0x85ebca6b);
    h ^= h >>> 15;
    return Math.imul(h, 0x2c1b3c6d) ^ (h >>> 13);
  }

  private grow(): void {
    const { first, second, counts } = this;
    const mask = first.length * 2 - 1;
    this.first = new Int32Array(first.length * 2).fill(-1);
    this.second = new Int32Array(first.length * 2);
    this.counts = new Uint32Array(first.length * 2);
    for (let o = 0; o < first.length; o++) {
      if (first[o] === -1) continue;
      let h = PairCounts.hash(first[o]!, second[o]!) & mask;
      while (this.first[h] !== -1) h = (h + 1) & mask;
      this.first[h] = first[o]!;
      this.second[h] = second[o]!;
      this.counts[h] = counts[o]!;
    }
  }
}
