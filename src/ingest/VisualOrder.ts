import * as Bidi from './Bidi.js';

/**
 * Right-to-left text that a PDF stores in visual order (the order it is drawn, left to right) and that pdf.js cannot
 * put back alone. pdf.js reverses each such run character by character, which turns around a glyph that stands for
 * several letters (LibreOffice maps its lam-alef ligature to "لا": it comes out "ال"), and it reorders a run with
 * glyph junk in it (the code of a glyph the font gave no Unicode value, read as a Latin letter) around the junk.
 */

const rtl = Bidi.rtlScripts;
const otherLetters = new RegExp(`(?:(?![${rtl}])\\p{L}\\p{M}*)+`, 'gu');
const endsRtl = new RegExp(`[${rtl}]\\p{M}*$`, 'u');
const startsRtl = new RegExp(`^[${rtl}]`, 'u');
/**
 * A letter standing alone that no one types in right-to-left text: an accented Latin letter, where a one-byte glyph
 * code with no value lands. A Greek letter standing alone is a symbol people write (an angle, a wavelength).
 */
const lone = new RegExp(`(?<=[${rtl}]\\p{M}*[.,،]?\\s)(?=\\p{L})[\\u00c0-\\u024f]\\s(?=[${rtl}])`, 'gu');

/**
 * Text without glyph junk: one or two letters of another script glued to a right-to-left letter (what a glyph
 * without a Unicode value reads as: a real Latin word in right-to-left text stands apart, as in "ה-USDA", and is
 * seldom shorter than three letters), and lone accented Latin letters between right-to-left words.
 */
export function withoutJunk(text: string): string {
  if (!Bidi.hasRightToLeft(text)) return text;
  const unglued = text.replace(otherLetters, (run: string, at: number) =>
    [...run.replace(/\p{M}/gu, '')].length <= 2 && (endsRtl.test(text.slice(0, at)) || startsRtl.test(text.slice(at + run.length))) ? '' : run,
  );
  return unglued.replace(lone, '');
}

/**
 * A pdf.js item's text with its glyph junk taken out where it was drawn: the item is put back in drawn order (pdf.js
 * read it with a right-to-left base when it says `rtl`), cleaned, and read again, so the junk does not move the right-
 * to-left pieces around it.
 */
export function itemText(text: string, rtl: boolean): string {
  if (withoutJunk(text) === text) return text;
  const drawn = Bidi.reordered(text, rtl);
  return Bidi.reordered(withoutJunk(drawn), rtl);
}

/** What a PDF page draws: for each text-showing operation, its glyphs' text in drawn order. */
export type Drawn = string[][];

/**
 * Words pdf.js reads wrong on a page, each with its right reading: right-to-left words drawn with a glyph that stands
 * for several letters, whose letters pdf.js turned around. A wrong reading that is also a word the page draws is
 * left alone: it cannot be told apart. `fold` is what becomes of item text before it is looked up.
 */
export function repairs(drawn: Drawn, fold: (text: string) => string): Map<string, string> {
  const words = drawn.flatMap((glyphs) => {
    const out: string[][] = [[]];
    for (const glyph of glyphs) {
      if (/^\s*$/u.test(glyph)) out.push([]);
      else out.at(-1)!.push(glyph);
    }
    return out.filter((w) => w.length > 0 && Bidi.hasRightToLeft(w.join('')) && !/[\p{Script=Latin}\p{N}]/u.test(w.join('')));
  });
  const read = (glyphs: string[]) => fold([...glyphs].reverse().join(''));
  const genuine = new Set(words.map(read));
  const out = new Map<string, string>();
  for (const word of words) {
    if (!word.some((g) => [...g].length > 1)) continue;
    const wrong = fold([...word.join('')].reverse().join(''));
    const right = read(word);
    if (wrong !== right && !genuine.has(wrong)) out.set(wrong, right);
  }
  return out;
}

/** Text with each word pdf.js read wrong replaced by its right reading. */
export function repaired(text: string, wrong: Map<string, string>): string {
  if (wrong.size === 0 || !Bidi.hasRightToLeft(text)) return text;
  return text.replace(/\S+/gu, (word) => wrong.get(word) ?? word);
}

/**
 * Letters written only at the end of a word: Hebrew's final forms, Arabic's teh marbuta and alef maqsura (and their
 * presentation forms, once folded).
 */
const wordFinal = /^[\u05da\u05dd\u05df\u05e3\u05e5\u0629\u0649]$/u;

/**
 * Whether a document draws its right-to-left words in reading order, left to right, as a writer with no bidi layout
 * does (CUPS's `texttopdf`), rather than as they are seen. `words` are right-to-left words as drawn, left to right. A
 * letter written only at a word's end tells: drawn last in reading order, first as seen. Reading order needs two such
 * words and none the other way, or most of the evidence: the usual drawing is the default.
 */
export function drawnInReadingOrder(words: string[]): boolean {
  let reading = 0;
  let seen = 0;
  for (const word of words) {
    const letters = [...word.normalize('NFKC')].filter((c) => /\p{L}/u.test(c));
    if (letters.length < 2) continue;
    if (wordFinal.test(letters.at(-1)!) && !wordFinal.test(letters[0]!)) reading++;
    if (wordFinal.test(letters[0]!) && !wordFinal.test(letters.at(-1)!)) seen++;
  }
  return (reading >= 2 && seen === 0) || (reading >= 3 && reading > seen * 4);
}
