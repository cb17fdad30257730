/**
 * The stems of a text, each ASCII token looked up without making a string of it: its lowercased characters are hashed
 * as they are read, and a hit is confirmed character by character. A chunk is analyzed at every question that meets it
 * first; looking each of its tokens up in a Map by a new string cost more than splitting the text. A token not seen
 * before is made a string once and stemmed by `stem`; the same stem string is returned for it from then on.
 *
 * Text between ASCII separators (any ASCII character but a letter or a digit) that holds a character past ASCII ("β",
 * "don’t", "café") is given to `unicode`, the whole-text analysis, on its own: the Unicode analysis (NFD, Latin marks
 * dropped, lowercase, split on anything not a letter or a number) never joins or splits across an ASCII separator, so
 * the pieces give the tokens the whole text gives. The one exception is lowercasing Σ, which reads its neighbours
 * across some separators ("Σ." before a letter): a text holding one is left to `unicode` whole.
 */
export class TextStems {
  /** Entry + 1 of each slot (0 is empty), and the hash of the token there. */
  private slots = new Int32Array(1 << 16);
  private hashes = new Int32Array(1 << 16);
  private tokens: string[] = [];
  private stems: string[] = [];
  private tokenHashes: number[] = [];

  /** `limit`: tokens held before the table starts again (a corpus reuses a small vocabulary; anything else is bounded). */
  constructor(
    private readonly stem: (token: string) => string,
    private readonly unicode: (text: string) => string[],
    private readonly limit = 200_000,
  ) {}

  /** The stems of `text`'s tokens in order, as `unicode(text)` gives them. */
  of(text: string): string[] {
    const out: string[] = [];
    let start = 0;
    let mixed = false;
    let hash = fnvBasis;
    for (let i = 0; i <= text.length; i++) {
      let c = i < text.length ? text.charCodeAt(i) : 32;
      if (c > 127) {
        if (c === capitalSigma) return this.unicode(text);
        mixed = true;
        continue;
      }
      if (c >= 65 && c <= 90) c |= 32;
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        hash = Math.imul(hash ^ c, fnvPrime);
        continue;
      }
      if (i > start) {
        if (!mixed) out.push(this.find(text, start, i, hash));
        else for (const stem of this.unicode(text.slice(start, i))) out.push(stem);
      }
      start = i + 1;
      mixed = false;
      hash = fnvBasis;
    }
    return out;
  }

  private find(text: string, start: number, end: number, hash: number): string {
    const mask = this.slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot]! - 1;
      if (entry < 0) return this.insert(text.slice(start, end).toLowerCase(), hash, slot);
      if (this.hashes[slot] === hash && matches(this.tokens[entry]!, text, start, end)) return this.stems[entry]!;
    }
  }

  private insert(token: string, hash: number, slot: number): string {
    const stem = this.stem(token);
    if (this.tokens.length >= this.limit) {
      this.clear();
      return stem;
    }
    this.slots[slot] = this.tokens.length + 1;
    this.hashes[slot] = hash;
    this.tokens.push(token);
    this.stems.push(stem);
    this.tokenHashes.push(hash);
    // At most half full, so a miss ends soon.
    if (this.tokens.length * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    return stem;
  }

  private clear(): void {
    [this.tokens, this.stems, this.tokenHashes] = [[], [], []];
    this.rehash(1 << 16);
  }

  private rehash(size: number): void {
    [this.slots, this.hashes] = [new Int32Array(size), new Int32Array(size)];
    const mask = size - 1;
    this.tokenHashes.forEach((hash, entry) => {
      let slot = hash & mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
      this.slots[slot] = entry + 1;
      this.hashes[slot] = hash;
    });
  }
}

/** FNV-1a, over the lowercased characters of a token. */
const fnvBasis = 0x811c9dc5 | 0;
const fnvPrime = 0x01000193;
const capitalSigma = 0x3a3;

/** Whether `text` from `start` to `end`, lowercased, is `token`. */
function matches(token: string, text: string, start: number, end: number): boolean {
  if (token.length !== end - start) return false;
  for (let k = 0; k < token.length; k++) {
    let c = text.charCodeAt(start + k);
    if (c >= 65 && c <= 90) c |= 32;
    if (c !== token.charCodeAt(k)) return false;
  }
  return true;
}
