import * as Bidi from './Bidi.js';

/**
 * What damaged glyphs stand for. A PDF tells readers what each glyph of a font means through the font's ToUnicode
 * map, and some producers write that map wrong: Ghostscript 10 re-distilling a file gives some glyphs a low byte or
 * another letter ("'" for alef, "Õ" for a Hebrew letter), placeholders (þ, ÿ, Ā) or a ligature's letters with their
 * bytes swapped; WeasyPrint 57 leaves most glyphs of a right-to-left line unmapped, so pdf.js reads their codes as
 * letters of whatever block they land in (Syriac, Tibetan, Armenian). Such values are junk beside the words, or words
 * lost.
 *
 * The font itself still orders its glyphs: a font keeps its letters in the order of their code points, and a subset
 * that keeps the font's glyph numbers (as those producers do) keeps that order. So a damaged glyph drawn between two
 * glyphs whose codes and values advance in step takes the value at its place in that step, or just past a longer run
 * of them, the place the run continues to; a letter whose value falls below the glyphs before it, and a glyph read from
 * its bare code, that the order does not place stand for nothing. Only fonts whose right-to-left glyphs follow code
 * point order are repaired (or, in a font ordered only block by block, glyphs inside a long run of glyphs in step,
 * and beside a run, damaged bytes that rise with their codes as a block of letters does), and only glyphs whose value is not right-to-left text: a font that numbers its glyphs in
 * order of use (Chromium, cairo) has no such order, and its values are left as they are.
 */

/** A glyph as drawn: its code in the font and the text pdf.js gives it. */
export type Glyph = { code: number; text: string };

// Script extensions, so that the Arabic tatweel (a letter of the Common script) anchors an Arabic font's order too.
const rtlChar = new RegExp(`^[${Bidi.rtlScripts.replaceAll('Script=', 'Script_Extensions=')}]$`, 'u');
/** A right-to-left letter or mark (an Arabic presentation form too): what anchors a font's order. */
const isRightToLeft = (text: string) => [...text].length === 1 && rtlChar.test(text) && /^[\p{L}\p{M}]$/u.test(text);
const hasRightToLeft = (text: string) => [...text].some((c) => isRightToLeft(c));
/** pdf.js read a glyph with no value from its code: the code's own code point. */
const fromCode = (glyph: Glyph) => glyph.code > 0xff && glyph.text === String.fromCodePoint(glyph.code);

/** Two or more ASCII letters, each with its two bytes swapped: U+6600 for "f". */
const isSwapped = (text: string) =>
  [...text].length >= 2 && [...text].every((c) => (c.charCodeAt(0) & 0xff) === 0 && /[A-Za-z]/.test(String.fromCharCode(c.charCodeAt(0) >> 8)));
const isSpace = (text: string) => /^\s+$/u.test(text);

/** Share of neighbouring anchors, by code, whose values rise too, and how many anchors, for a font to count as ordered. */
const orderedShare = 0.9;
const orderedAnchors = 12;
/** Anchors in step, one after another, that show a block of a font in order when the font as a whole is not. */
const localRunAnchors = 6;

type Anchor = { code: number; value: number };
/** Anchors whose codes and values advance in step, one after another: where the font's order is seen. */
type Run = { first: Anchor; last: Anchor; count: number };

/**
 * The repaired values of a font's damaged glyphs, by code ('' for a glyph that stands for nothing), from the glyphs a
 * document draws with it. Empty when nothing is damaged or the font's glyphs keep no order.
 */
export function repairs(glyphs: Glyph[]): Map<number, string> {
  const out = new Map<number, string>();
  const byCode = new Map<number, Glyph>();
  for (const glyph of glyphs) byCode.set(glyph.code, glyph);
  const all = [...byCode.values()];
  // A ligature's letters written with their two bytes swapped ("fi" as U+6600 U+6900, what Ghostscript 10 writes).
  for (const glyph of all) if (isSwapped(glyph.text)) out.set(glyph.code, [...glyph.text].map((c) => String.fromCharCode(c.charCodeAt(0) >> 8)).join(''));
  // One-byte fonts (simple fonts) map codes through encodings of their own; only two-byte codes are glyph numbers.
  if (!all.some((g) => g.code > 0xff)) return out;
  // A font whose every glyph reads as its own code numbers its glyphs by code point (CID as Unicode): no fallback.
  if (all.every(fromCode)) return out;
  const anchors = all
    .filter((g) => isRightToLeft(g.text) && !fromCode(g))
    .map((g) => ({ code: g.code, value: g.text.codePointAt(0)! }))
    .sort((a, b) => a.code - b.code);
  const ordered = isOrdered(anchors);
  const runs = ordered ? runsOf(anchors) : [];
  const damaged = (glyph: Glyph) => !(hasRightToLeft(glyph.text) && !fromCode(glyph)) && !isSpace(glyph.text) && !out.has(glyph.code);
  // Glyphs between two anchors in step take their place in the step: in a clean font they already hold it. A font
  // not ordered as a whole (Amiri keeps its contextual forms after its letters, in no such order) may still keep a
  // block in order: inside a long run of anchors in step, a glyph takes its place too.
  const long = runsOf(anchors).filter((r) => r.count >= localRunAnchors);
  for (const glyph of all.filter(damaged)) {
    const value = ordered ? between(glyph, anchors) : insideRun(glyph, long);
    if (value !== undefined && value !== glyph.text) out.set(glyph.code, value);
  }
  // Beside a run in step, damaged values that rise with their codes are a block of the font's letters, in order.
  for (const run of runsOf(anchors).filter((r) => r.count >= 3)) {
    for (const [code, value] of risingBeside(run, all, damaged)) out.set(code, value);
  }
  // Only a font shown to be damaged (glyphs read from their codes, or values the order contradicts) loses letters or
  // has glyphs placed past its runs: a clean font may keep its Latin letters after its right-to-left ones.
  const shown = out.size > 0 || all.some(fromCode);
  for (const glyph of all.filter(damaged)) {
    const place = ordered && shown ? placeOf(glyph, anchors, runs) : undefined;
    if (place?.value !== undefined) out.set(glyph.code, place.value);
    else if (fromCode(glyph) || place?.breaks) out.set(glyph.code, '');
  }
  return out;
}

/**
 * A font whose right-to-left glyphs follow code point order: a dozen of them or more, nine in ten rising with their
 * codes. A font numbered by first use rises as often as not, and a few glyphs prove nothing.
 */
function isOrdered(anchors: Anchor[]): boolean {
  let rising = 0;
  for (let i = 1; i < anchors.length; i++) if (anchors[i]!.value > anchors[i - 1]!.value) rising++;
  return anchors.length >= orderedAnchors && rising >= (anchors.length - 1) * orderedShare;
}

const inStep = (a: Anchor, b: Anchor) => b.code - a.code === b.value - a.value;

/** The runs of anchors in step. */
function runsOf(anchors: Anchor[]): Run[] {
  const runs: Run[] = [];
  for (const anchor of anchors) {
    const last = runs.at(-1);
    if (last !== undefined && inStep(last.last, anchor)) {
      last.last = anchor;
      last.count++;
    } else runs.push({ first: anchor, last: anchor, count: 1 });
  }
  return runs;
}

/**
 * A damaged glyph's place in the font's order: the value the order gives it, and whether its own value breaks the
 * order (a letter outside ASCII drawn between right-to-left glyphs, lower than the value of the glyph before it). Between two anchors in step, the glyph takes its place in the step. Just outside a run of three or more
 * anchors in step, it takes the place the run continues to, no further from the run than the run is long, and only
 * onto letters or marks of the run's script with no other character between (Unicode's gaps and punctuation stop it).
 */
function placeOf(glyph: Glyph, anchors: Anchor[], runs: Run[]): { value?: string; breaks: boolean } {
  const below = anchors.findLast((a) => a.code < glyph.code);
  const above = anchors.find((a) => a.code > glyph.code);
  // Only a single letter or symbol outside ASCII, drawn among the right-to-left glyphs, breaks the order: a ligature's
  // letters and punctuation may sit anywhere, and a font made for a right-to-left script may keep its Latin after it.
  const own = glyph.text.codePointAt(0) ?? 0;
  const breaks = below !== undefined && above !== undefined && [...glyph.text].length === 1 && /^[^\p{ASCII}](?<=[\p{L}\p{S}])$/u.test(glyph.text) && own < below.value;
  const inside = between(glyph, anchors);
  if (inside !== undefined) return { value: inside, breaks };
  const after = runs.find((r) => r.first === above && r.count >= 3);
  const before = runs.find((r) => r.last === below && r.count >= 3);
  for (const [run, from] of [
    [after, after?.first],
    [before, before?.last],
  ] as const) {
    if (run === undefined || from === undefined || Math.abs(from.code - glyph.code) > run.last.code - run.first.code) continue;
    const value = from.value + glyph.code - from.code;
    const between = [...Array(Math.abs(value - from.value) + 1)].map((_, i) => String.fromCodePoint(Math.min(value, from.value) + i));
    if (value > 0 && between.every(isRightToLeft)) return { value: unmarked(value), breaks };
  }
  return { breaks };
}

/**
 * The value of a glyph inside a run of anchors in step, when it is a right-to-left letter or mark: a run of several
 * anchors in step does not happen by chance in a font numbered by first use.
 */
function insideRun(glyph: Glyph, runs: Run[]): string | undefined {
  const run = runs.find((r) => r.first.code < glyph.code && glyph.code < r.last.code);
  if (run === undefined) return undefined;
  const value = run.first.value + glyph.code - run.first.code;
  return isRightToLeft(String.fromCodePoint(value)) ? unmarked(value) : undefined;
}

/** Damaged glyphs in a row beside a run, for their own values to show the font's order. */
const risingGlyphs = 4;
/** A damaged value Ghostscript writes: one accented Latin letter, a byte of the letter it stands for. */
const isByteValue = (text: string) => /^[\u00c0-\u00ff]$/u.test(text);

/**
 * Damaged glyphs next to a run of anchors in step, on either side, each with the place the run continues to: when four
 * or more of them in a row, by code, hold one accented Latin letter each (a damaged value's byte), values that rise with
 * their codes as the letters of a block do, and places that are right-to-left letters. Ghostscript's values for a
 * subset of DejaVu Sans's Hebrew are such bytes, with too few right values among them to order the font.
 */
function risingBeside(run: Run, glyphs: Glyph[], damaged: (glyph: Glyph) => boolean): Map<number, string> {
  const out = new Map<number, string>();
  const sorted = [...glyphs].sort((a, b) => a.code - b.code);
  const sides = [
    { side: sorted.filter((g) => g.code > run.last.code), from: run.last, up: true },
    { side: sorted.filter((g) => g.code < run.first.code).reverse(), from: run.first, up: false },
  ];
  for (const { side, from, up } of sides) {
    const taken: [number, string][] = [];
    let previous: number | undefined;
    for (const glyph of side) {
      const value = from.value + glyph.code - from.code;
      const own = glyph.text.codePointAt(0) ?? 0;
      const inOrder = previous === undefined || (up ? own > previous : own < previous);
      if (!damaged(glyph) || !isByteValue(glyph.text) || !inOrder || value <= 0 || !isRightToLeft(String.fromCodePoint(value))) break;
      taken.push([glyph.code, unmarked(value)]);
      previous = own;
    }
    if (taken.length >= risingGlyphs) for (const [code, value] of taken) out.set(code, value);
  }
  return out;
}

/** The value of a glyph between two anchors in step: its place in the step. */
function between(glyph: Glyph, anchors: Anchor[]): string | undefined {
  const below = anchors.findLast((a) => a.code < glyph.code);
  const above = anchors.find((a) => a.code > glyph.code);
  return below !== undefined && above !== undefined && inStep(below, above) ? unmarked(below.value + glyph.code - below.code) : undefined;
}

/**
 * A repaired value as text, vowel marks left out: where such a mark was drawn on its own, its letter is not known, and
 * marks drawn apart are left out elsewhere too (`Bidi.logicalLine`).
 */
const unmarked = (value: number) => String.fromCodePoint(value).replace(/\p{M}/u, '');

/** The repairs of each font the pages draw with (pdf.js names a document's fonts once for all its pages). */
export function documentRepairs(pages: Map<string, Glyph[]>[]): Map<string, Map<number, string>> {
  const fonts = new Map<string, Map<number, Glyph>>();
  for (const page of pages) {
    for (const [name, glyphs] of page) {
      const codes = fonts.get(name) ?? new Map<number, Glyph>();
      for (const glyph of glyphs) codes.set(glyph.code, glyph);
      fonts.set(name, codes);
    }
  }
  return new Map([...fonts].map(([name, codes]) => [name, repairs([...codes.values()])]));
}

/**
 * An item's text with its damaged glyphs replaced. The item is put back in drawn order (pdf.js read it with a right-
 * to-left base when `rtl`), matched against the glyphs the page drew with its font from `cursor` on, and read again.
 * A glyph whose text sits where it was drawn is taken as it is; otherwise the word at hand is matched as a set of
 * letters (pdf.js and this reading may order junk inside a word differently). Spaces pdf.js put between glyphs stay. A
 * glyph whose text holds words of right-to-left text is already in reading order: it is kept whole. An item no reading
 * matches is matched as one set of characters, in the glyphs' order (spaces pdf.js put in are lost then); one that
 * does not match at all is left as it is, and the cursor with it.
 */
export function repairedItem(text: string, rtl: boolean, glyphs: Glyph[], cursor: { at: number }, fixes: Map<number, string>): { text: string; rtl: boolean; phrase?: boolean } {
  // pdf.js's reordering and this one may differ around junk; reversing or keeping the text are the other readings.
  const readings = [...new Set([Bidi.reordered(text, rtl), [...text].reverse().join(''), text])];
  const attempts = [...readings.map((drawn) => () => inOrder(drawn, new Taker(glyphs, cursor.at, fixes))), () => asOneSet(text, new Taker(glyphs, cursor.at, fixes))];
  for (const attempt of attempts) {
    const matched = attempt();
    if (matched === undefined) continue;
    cursor.at = matched.at;
    if (!matched.changed) return { text, rtl };
    const letters = matched.text.match(/\p{L}/gu)?.length ?? 0;
    const rightToLeft = (matched.text.match(rtlLetters)?.length ?? 0) * 2 > letters;
    return { text: Bidi.reordered(matched.text, rightToLeft), rtl: rightToLeft, phrase: matched.phrase };
  }
  return { text, rtl };
}

const rtlLetters = new RegExp(`(?=\\p{L})[${Bidi.rtlScripts}]`, 'gu');

/** Glyphs taken one after another from a start, each as its fix or as the text it was seen as. */
class Taker {
  text = '';
  changed = false;
  /** A glyph taken stands for several letters. */
  phrase = false;
  constructor(
    private readonly glyphs: Glyph[],
    public at: number,
    readonly fixes: Map<number, string>,
  ) {}

  get next(): Glyph | undefined {
    return this.glyphs[this.at];
  }

  take(seen: string): void {
    const fix = this.fixes.get(this.next!.code);
    this.changed ||= fix !== undefined;
    const value = fix ?? seen;
    this.phrase ||= (value.match(/\p{L}/gu)?.length ?? 0) > 1;
    // A glyph that stands for a phrase holds it in reading order: turned here, so that reading the line turns it back.
    this.text += /\s/u.test(value) && Bidi.hasRightToLeft(value) ? Bidi.reordered(value, true) : value;
    this.at++;
  }

  /** Takes glyphs until their characters use up `chars` (whitespace aside); false when a glyph's do not fit. */
  takeSet(chars: string): boolean {
    const left = new Map<string, number>();
    const counted = (t: string) => [...t.replace(/\s/gu, '')];
    for (const char of counted(chars)) left.set(char, (left.get(char) ?? 0) + 1);
    let count = counted(chars).length;
    while (count > 0) {
      const glyph = this.next;
      if (glyph === undefined) return false;
      const seen = glyph.text === '' ? '' : [glyph.text, glyph.text.normalize('NFKC')].find((t) => counted(t).every((c) => (left.get(c) ?? 0) > 0));
      if (seen === undefined) return false;
      for (const char of counted(seen)) left.set(char, left.get(char)! - 1);
      count -= counted(seen).length;
      this.take(seen);
    }
    return true;
  }
}

/** An item's characters matched as one set against the glyphs, in the order they were drawn. */
const asOneSet = (text: string, taker: Taker) => (taker.takeSet(text) ? taker : undefined);

/** Drawn text matched against the glyphs in order, word by word where junk moved; undefined if it does not match. */
function inOrder(drawn: string, taker: Taker): Taker | undefined {
  let i = 0;
  while (i < drawn.length) {
    const glyph = taker.next;
    const exact = glyph === undefined || glyph.text === '' ? undefined : [glyph.text, glyph.text.normalize('NFKC')].find((t) => drawn.startsWith(t, i));
    if (exact !== undefined) {
      taker.take(exact);
      i += exact.length;
    } else if (/\s/u.test(drawn[i]!)) {
      // A glyph pdf.js read as white space (its code's own value, a line feed) holds its fixed value there.
      if (glyph !== undefined && /^\s+$/u.test(glyph.text) && taker.fixes.has(glyph.code)) taker.take(glyph.text);
      else taker.text += drawn[i];
      i++;
    } else if (glyph !== undefined && /^[\p{Cc}\p{Cf}]*$/u.test(glyph.text) && taker.fixes.has(glyph.code)) {
      // A glyph pdf.js read as a control or format character (a soft hyphen) and left out of the text: its fixed value
      // goes where it was drawn.
      taker.take('');
    } else if (glyph !== undefined && isSpace(glyph.text)) {
      // A space glyph pdf.js made a piece of its own, or left out.
      taker.at++;
    } else {
      const end = drawn.slice(i).search(/\s/u);
      const word = end < 0 ? drawn.slice(i) : drawn.slice(i, i + end);
      if (!taker.takeSet(word)) return undefined;
      i += word.length;
    }
  }
  return taker;
}
