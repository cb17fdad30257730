import { stemmer } from 'stemmer';

/**
 * Numbers however a text writes them: digits ("27", "2,400", "7.5"), words ("twenty-seven", "one hundred and
 * twenty", "two and a half"), fractions ("a quarter", "three quarters", "half"), with a percent sign or word. Each
 * becomes one value, so "27 °C" and "twenty-seven degrees", or "25%" and "a quarter", are the same number to a
 * reader that compares what a question asks with what content states.
 */

const units: Record<string, number> = {
  zero: 0, nought: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
};
const tens: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 };
const scales: Record<string, number> = { hundred: 100, thousand: 1_000, million: 1_000_000, billion: 1_000_000_000 };
/** Fractions as words, by their denominator ("a quarter", "three quarters", "two thirds", "half"). */
const parts: Record<string, number> = { half: 2, halves: 2, third: 3, thirds: 3, quarter: 4, quarters: 4, fifth: 5, fifths: 5, tenth: 10, tenths: 10 };
const counts: Record<string, number> = { dozen: 12, score: 20 };

/** One number found in a text: its value, and whether it was a share (a percent, or a fraction of a whole). */
export type Found = { value: number; share: boolean };

type Word = { word: string; at: number };

/** The value of number words starting at `i`, and how many words it took; undefined when none starts there. */
function readWords(words: Word[], i: number): { value: number; taken: number; share: boolean } | undefined {
  const w = (k: number) => words[k]?.word ?? '';
  let j = i;
  let total = 0;
  let current = 0;
  let any = false;
  // "a quarter", "a dozen", "a hundred": the article stands for one. "half" is a share by itself.
  if ((w(j) === 'a' || w(j) === 'an') && (w(j + 1) in parts || w(j + 1) in counts || w(j + 1) in scales)) {
    current = 1;
    any = true;
    j += 1;
  } else if (w(j) === 'half') return { value: 0.5, taken: 1, share: true };
  for (; j < words.length; j++) {
    const x = w(j);
    const afterTens = current % 10 === 0 && current % 100 >= 20;
    const afterHundreds = current > 0 && current % 100 === 0;
    // "two thousand three hundred": after a thousand, the next number word adds to it.
    const afterScale = current === 0 && total > 0;
    if (x in units && (!any || afterTens || afterHundreds || afterScale)) current += units[x]!;
    else if (x in tens && (!any || afterHundreds || afterScale)) current += tens[x]!;
    else if (x === 'hundred' && any && current > 0 && current < 100) current *= 100;
    else if (x in scales && x !== 'hundred' && any) {
      total += (current || 1) * scales[x]!;
      current = 0;
    } else if (x in counts && any && current > 0 && current < 20) current *= counts[x]!;
    else if (x in parts && any && total === 0 && current > 0 && current < 20) return { value: current / parts[x]!, taken: j + 1 - i, share: true };
    else if (x === 'and' && any && w(j + 1) === 'a' && w(j + 2) in parts) return { value: total + current + 1 / parts[w(j + 2)]!, taken: j + 3 - i, share: false };
    else if (x === 'and' && afterHundreds && (w(j + 1) in units || w(j + 1) in tens)) continue;
    else break;
    any = true;
  }
  return any ? { value: total + current, taken: j - i, share: false } : undefined;
}


/**
 * Every number a text states, once each, in the order found: digits with their decimal point and thousands commas,
 * number words, and fractions; a percent (sign or word) and a fraction are shares (0.25 for "25%" and "a quarter").
 * A lone "one" is left out: it is mostly a pronoun, as "the third week" is an order, not a share.
 */
export function inText(text: string): Found[] {
  const found: Found[] = [];
  const add = (value: number, share: boolean) => {
    if (!Number.isFinite(value)) return;
    if (!found.some((f) => f.value === value && f.share === share)) found.push({ value, share });
  };
  const lower = text.toLowerCase();
  // Digits: "2,400", "7.5", "27°C", "25%", "25 percent", "½".
  for (const m of lower.matchAll(/(?<![\p{L}\p{N}.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*(%|per\s?cent|percent))?/gu)) {
    const value = Number(m[1]!.replaceAll(',', ''));
    // A percent is a share of a whole, as "a quarter" is.
    add(m[2] ? value / 100 : value, m[2] !== undefined);
  }
  for (const [glyph, value] of [['½', 0.5], ['¼', 0.25], ['¾', 0.75], ['⅓', 1 / 3], ['⅔', 2 / 3]] as const) if (lower.includes(glyph)) add(value, true);
  // Words, read as a sequence so "twenty-seven" and "one hundred and twenty" are one number each.
  // Digits and punctuation between words end a number: "twenty, 25 per cent" is two.
  const words: Word[] = [...lower.matchAll(/[a-z]+|[^a-z\s\u2010\u2011\u2013-]+/g)].map((m) => ({ word: m[0], at: m.index! }));
  for (let i = 0; i < words.length; ) {
    const read = readWords(words, i);
    if (!read || read.taken === 0) {
      i += 1;
      continue;
    }
    const alone = read.taken === 1 && words[i]!.word === 'one';
    const next = words[i + read.taken]?.word;
    const percent = !read.share && (next === 'percent' || (next === 'per' && words[i + read.taken + 1]?.word === 'cent'));
    if (!alone) {
      add(percent ? read.value / 100 : read.value, read.share || percent);
    }
    i += read.taken;
  }
  return found;
}

/** The values a text states, as strings that compare equal however they were written ("27", "s0.25" for a share). */
export function keys(text: string): Set<string> {
  return new Set(inText(text).map(key));
}

/** A number's comparable key. */
export function key(found: Found): string {
  const rounded = Math.round(found.value * 10_000) / 10_000;
  return `${found.share ? 's' : ''}${rounded}`;
}

/** Whether `text` states every number `asked` states, however either writes them. */
export function states(text: string, asked: string): boolean {
  const wanted = keys(asked);
  if (wanted.size === 0) return true;
  const said = keys(text);
  return [...wanted].every((k) => said.has(k));
}

/** Number words by their Porter stems ("twenti" is "twenty"), for text the index keeps only as stems. */
const byStem = new Map<string, string>(
  [...Object.keys(units), ...Object.keys(tens), ...Object.keys(scales), ...Object.keys(parts), ...Object.keys(counts), 'a', 'an', 'and', 'percent', 'per', 'cent'].map((w) => [stemmer(w), w]),
);

/** The values a text states, from its stems in order (as the index keeps a chunk): number words and digits. */
export function keysOfStems(stems: readonly string[]): Set<string> {
  return keys(stems.map((s) => byStem.get(s) ?? (/^\d/.test(s) ? s : 'x')).join(' '));
}
