import * as Text from '../Text.js';

/**
 * Term ids of texts, stemmed as `Text.stemsOf` stems them; each distinct token is stemmed once. ASCII text (most of
 * it) is split by a character loop that gives the same tokens as `Text.tokens`, several times faster than its regex.
 */
export class TermIds {
  readonly terms: string[] = [];
  private readonly byStem = new Map<string, number>();
  private readonly byToken = new Map<string, number>();

  /** Appends the term ids of `text`'s tokens, in order, to `out`. */
  add(text: string, out: number[]): void {
    if (/[^\p{ASCII}]/u.test(text)) {
      for (const token of Text.tokens(text)) out.push(this.idOf(token));
      return;
    }
    const lower = text.toLowerCase();
    let start = -1;
    for (let i = 0; i <= lower.length; i++) {
      const c = i < lower.length ? lower.charCodeAt(i) : 32;
      if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
        if (start < 0) start = i;
      } else if (start >= 0) {
        out.push(this.idOf(lower.slice(start, i)));
        start = -1;
      }
    }
  }

  private idOf(token: string): number {
    let id = this.byToken.get(token);
    if (id === undefined) {
      const stem = Text.stem(token);
      id = this.byStem.get(stem);
      if (id === undefined) {
        id = this.terms.length;
        this.terms.push(stem);
        this.byStem.set(stem, id);
      }
      this.byToken.set(token, id);
    }
    return id;
  }
}
