/**
 * Reading order for lines of mixed direction. A PDF places glyphs where they are seen, and most producers draw them
 * left to right, so a line of Arabic or Hebrew comes out of the page backwards. This puts it back in the order it is
 * read and typed (logical order) with the Unicode bidirectional algorithm (UAX #9), applied to the pieces of a line as
 * they sit on the page.
 */

/** A piece of a line as drawn: text already in logical order within the piece, and where it sits on the line. */
export type Run = {
  text: string;
  /** Left edge, in page units. */
  x: number;
  /** The piece was read right to left (pdf.js text items say so in `dir`). */
  rtl: boolean;
  /** Width and font size, in page units: a gap between pieces wider than a fifth of the size is a space. */
  width?: number | undefined;
  size?: number | undefined;
};

type Type = 'L' | 'R' | 'EN' | 'ES' | 'CS' | 'ET' | 'N';
type Token = { text: string; type: Type };

// JavaScript has no Bidi_Class property: the scripts written right to left stand in for it.
export const rtlScripts = String.raw`\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}\p{Script=Hanifi_Rohingya}\p{Script=Yezidi}`;
const rtlLetter = new RegExp(`(?=\\p{L})[${rtlScripts}]`, 'u');
const rtlLetters = new RegExp(`(?=\\p{L})[${rtlScripts}]`, 'gu');
const onlyMarks = /^\s*\p{M}+\s*$/u;

/** Whether a text has a letter of a script written right to left. */
export const hasRightToLeft = (text: string): boolean => rtlLetter.test(text);

/**
 * The text of a line in logical order, from its runs in the order they were drawn. A line without right-to-left
 * letters is the runs joined as drawn; otherwise the runs are laid out by position, combining marks drawn as pieces
 * of their own are left out, the line is reordered by the bidi algorithm and brackets read right to left are turned
 * back the way they were typed. The line's direction is that of most of its letters; a line with none takes
 * `rightToLeft`, the direction of the paragraph it ends. A line of a page drawn in reading order (`drawnInReadingOrder`)
 * is its runs left to right.
 */
export function logicalLine(runs: Run[], options: { rightToLeft?: boolean; drawnInReadingOrder?: boolean } = {}): string {
  const present = runs.filter((r) => r.text !== '');
  // A line of no letters at all (the end of a sentence wrapped alone: ".1965") takes the direction of its paragraph.
  const unlettered = options.rightToLeft === true && !present.some((r) => /\p{L}/u.test(r.text));
  if (!unlettered && !present.some((r) => hasRightToLeft(r.text))) return present.map((r) => r.text).join('');
  // A page drawn in reading order, left to right (no bidi layout), is read as it is drawn.
  if (options.drawnInReadingOrder === true) return withSpaces(runs).map((r) => r.text).join('');
  // A vowel mark drawn as a piece of its own cannot be put on its letter reliably: where and when producers draw it
  // differs. Unvowelled text is how these scripts are mostly written, and searched.
  const visual = withSpaces(runs);
  const tokens = visual.flatMap(tokensOf);
  const text = tokens.map((t) => t.text).join('');
  const rtl = text.match(rtlLetters)?.length ?? 0;
  const letters = text.match(/\p{L}/gu)?.length ?? 0;
  // A sentence's stop is drawn at the end of its line in the paragraph's direction: one at the line's right end marks a
  // left-to-right paragraph, whatever most of its letters are (a spreadsheet cell, a left-to-right page quoting).
  const base = !unlettered && endsRightWithStop(visual) ? 0 : unlettered || rtl > letters - rtl ? 1 : 0;
  const resolved = levels(tokens, base);
  // Rule L4 the other way round: right to left, a bracket is drawn as its mirror image, and maps to that.
  const unmirrored = tokens.map((t, i) => (t.type === 'R' || resolved[i]! % 2 === 1 ? t.text.replace(/[()[\]{}<>«»‹›]/gu, (c) => mirrors[c] ?? c) : t.text));
  return reorder(unmirrored, resolved).join('');
}

/**
 * The line's right end is a sentence's stop drawn beside a right-to-left letter: the end of a left-to-right paragraph.
 * (A right-to-left line may start with a stop, as ".NET" or ".1965" do, but then beside a Latin letter or a digit.)
 */
function endsRightWithStop(visual: Run[]): boolean {
  const pieces = visual.filter((r) => r.text.trim() !== '');
  // Each piece's characters as they are seen, left to right: a right-to-left piece holds them in reading order.
  const seen = pieces.flatMap((r) => {
    const chars = [...r.text.trim()];
    return r.rtl && hasRightToLeft(r.text) ? chars.reverse() : chars;
  });
  if (!/[.!?…؟]/u.test(seen.at(-1) ?? '')) return false;
  const before = seen.slice(0, -1).findLast((c) => !/[.!?…؟\s]/u.test(c));
  return before !== undefined && rtlLetter.test(before);
}

/**
 * The pieces with text, left to right, with a space where a gap parts two: producers that draw each direction's piece
 * apart (LibreOffice) leave the space out of both and move the next piece instead. Pieces without text (a dropped
 * elongation stroke) still cover the gap they fill.
 */
function withSpaces(runs: Run[]): Run[] {
  const out: Run[] = [];
  let reach: number | undefined;
  const sorted = withoutStraySpaces([...runs].sort((a, b) => a.x - b.x));
  const share = spaceShare(sorted);
  for (const run of sorted) {
    const text = run.text !== '' && !onlyMarks.test(run.text);
    // pdf.js marks a line's end with an empty piece of no width.
    if (!text && !run.width) continue;
    const last = out.at(-1);
    if (text && last && reach !== undefined && run.size && run.x - reach > run.size * share && !/\s$/u.test(last.text) && !/^\s/u.test(run.text)) {
      out.push({ text: ' ', x: run.x, rtl: false });
    }
    if (text) out.push(run);
    // A space covers no ink: Ghostscript draws one as wide as the gap it spans, which would hide the gaps after it.
    if (/^\s+$/u.test(run.text)) continue;
    if (run.width !== undefined) reach = Math.max(reach ?? -Infinity, run.x + run.width);
    else reach = undefined;
  }
  return out;
}

/**
 * The gap, as a share of the font size, wider than which two pieces stand apart as words: a fifth of the size, or less
 * on a line drawn glyph by glyph, whose letters touch (most of its gaps are none) and whose words a tightly justified
 * line may part by less than a fifth (LuaTeX drawing unjoined Arabic): there, a tenth above the usual gap.
 */
function spaceShare(sorted: Run[]): number {
  const gaps: number[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1]!, sorted[i]!];
    if (a.width === undefined || !b.size || !/\S/u.test(a.text) || !/\S/u.test(b.text)) continue;
    gaps.push((b.x - (a.x + a.width)) / b.size);
  }
  // Too few pieces to tell letters from words by their gaps.
  if (gaps.length < 8) return 0.2;
  gaps.sort((x, y) => x - y);
  const usual = gaps[Math.floor(gaps.length / 2)]!;
  return Math.min(0.2, Math.max(0.1, usual + 0.1));
}

/**
 * The runs without spaces that part nothing: a producer that draws each glyph of a right-to-left word on its own
 * (cairo) leaves pdf.js's pen after the word's leftmost glyph, and a space pdf.js puts there lands inside the word.
 * A space is kept where the text on either side of it leaves a gap, as a space does. `sorted` is left to right.
 */
function withoutStraySpaces(sorted: Run[]): Run[] {
  const isText = (run: Run) => /\S/u.test(run.text);
  return sorted.filter((run, i) => {
    if (isText(run) || run.text === '' || !run.size) return true;
    let before: Run | undefined;
    for (let j = i - 1; j >= 0 && before === undefined; j--) if (isText(sorted[j]!)) before = sorted[j];
    const after = sorted.slice(i + 1).find(isText);
    if (before?.width === undefined || after === undefined) return true;
    return after.x - (before.x + before.width) > run.size * 0.2;
  });
}

/**
 * A text reordered by the bidi algorithm as one line with the given base: from drawn order to reading order, or back
 * (for the plain runs of a line the reordering is its own inverse).
 */
export function reordered(text: string, rtl: boolean): string {
  const tokens = tokensOf({ text, x: 0, rtl: false, split: true });
  return reorder(tokens.map((t) => t.text), levels(tokens, rtl ? 1 : 0)).join('');
}

const mirrors: Record<string, string> = { '(': ')', ')': '(', '[': ']', ']': '[', '{': '}', '}': '{', '<': '>', '>': '<', '«': '»', '»': '«', '‹': '›', '›': '‹' };

/**
 * A run read right to left is already in logical order: one opaque right-to-left token. A run read left to right with
 * right-to-left letters in it was reordered with a left-to-right base: one opaque left-to-right token. Any other run
 * is split into characters, typed as the bidi algorithm types them.
 */
function tokensOf(run: Run & { split?: boolean }): Token[] {
  if (!run.split && run.rtl && hasRightToLeft(run.text)) return [{ text: run.text, type: 'R' }];
  if (!run.split && hasRightToLeft(run.text)) return [{ text: run.text, type: 'L' }];
  const tokens: Token[] = [];
  for (const char of run.text) {
    const previous = tokens[tokens.length - 1];
    // A combining mark takes the type of the character it sits on (rule W1).
    if (/\p{M}/u.test(char) && previous) previous.text += char;
    else tokens.push({ text: char, type: typeOf(char) });
  }
  return tokens;
}

function typeOf(char: string): Type {
  if (rtlLetter.test(char)) return 'R';
  if (/\p{L}/u.test(char)) return 'L';
  if (/\p{Nd}/u.test(char)) return 'EN';
  if (/[+\-\u2212]/u.test(char)) return 'ES';
  if (/[,.:/\u00a0\u060c]/u.test(char)) return 'CS';
  if (/[#%\u00b0\u00b1\u2030\u2031\u066a\p{Sc}]/u.test(char)) return 'ET';
  return 'N';
}

/** Embedding levels of the tokens (rules W4 to W7, N1, N2, I1 and I2 of UAX #9, one paragraph, no explicit embeddings). */
function levels(tokens: Token[], base: 0 | 1): number[] {
  const types = tokens.map((t) => t.type);
  const n = types.length;
  // W4: one separator between two numbers joins them; W5: terminators next to a number are part of it.
  for (let i = 1; i < n - 1; i++) {
    if (types[i - 1] === 'EN' && types[i + 1] === 'EN' && (types[i] === 'ES' || types[i] === 'CS')) types[i] = 'EN';
  }
  for (let i = 0; i < n; i++) {
    if (types[i] !== 'ET') continue;
    let end = i;
    while (end < n && types[end] === 'ET') end++;
    if (types[i - 1] === 'EN' || types[end] === 'EN') types.fill('EN', i, end);
    i = end - 1;
  }
  // W6: other separators and terminators are neutral; W7: a number after left-to-right text is left to right.
  let strong: Type = base ? 'R' : 'L';
  for (let i = 0; i < n; i++) {
    if (types[i] === 'ES' || types[i] === 'CS' || types[i] === 'ET') types[i] = 'N';
    if (types[i] === 'L' || types[i] === 'R') strong = types[i]!;
    else if (types[i] === 'EN' && strong === 'L') types[i] = 'L';
  }
  // N1, N2: neutrals between two of one direction take it (numbers count as right to left); others take the base.
  const direction = (t: Type | undefined): Type => (t === undefined ? (base ? 'R' : 'L') : t === 'EN' ? 'R' : t);
  for (let i = 0; i < n; i++) {
    if (types[i] !== 'N') continue;
    let end = i;
    while (end < n && types[end] === 'N') end++;
    const before = direction(types[i - 1]);
    const after = direction(types[end]);
    types.fill(before === after ? before : base ? 'R' : 'L', i, end);
    i = end - 1;
  }
  // I1, I2.
  return types.map((t) => (base === 0 ? (t === 'L' ? 0 : t === 'R' ? 1 : 2) : t === 'R' ? 1 : 2));
}

/** Rule L2: from the highest level down to the lowest odd one, reverse every run at that level or higher. */
function reorder(texts: string[], levels: number[]): string[] {
  const order = [...texts];
  const at = [...levels];
  const highest = Math.max(0, ...at);
  for (let level = highest; level >= 1; level--) {
    for (let i = 0; i < order.length; i++) {
      if (at[i]! < level) continue;
      let end = i;
      while (end < order.length && at[end]! >= level) end++;
      order.splice(i, end - i, ...order.slice(i, end).reverse());
      at.splice(i, end - i, ...at.slice(i, end).reverse());
      i = end - 1;
    }
  }
  return order;
}
