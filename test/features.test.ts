import { describe, expect, test } from 'vitest';
import type { Stats } from '../src/retrieval/index/Stats.js';
import { TextStems } from '../src/retrieval/TextStems.js';
import * as Features from '../src/retrieval/ranking/Features.js';
import * as Text from '../src/retrieval/Text.js';

/**
 * The reranker's features, worked out by hand for a small question and chunk: each is the share of the question's
 * weight (its key stems' IDF) that the chunk, its title, its best sentence or two, its word pairs or its numbers
 * answer, so a score means the same whatever else was found.
 */

const stats = (idf: Record<string, number>) => ({ averageTokens: 12, idf: (stem: string) => idf[stem] ?? 1 }) as unknown as Stats;

function features(question: string, title: string, text: string, idf: Record<string, number> = {}) {
  const s = stats(idf);
  const q = Features.question(Text.queryTerms(question), question, s);
  const values = Features.extract(q, Features.analyze(title, text, 0), s);
  return Object.fromEntries(Features.names.map((name, i) => [name, values[i]!]));
}

describe('Features', () => {
  test('behavior: ASCII text splits into the tokens the Unicode classes give, and the analysis keeps every sentence\'s stems in order', () => {
    let seed = 5;
    const r = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const unicode = (text: string) => text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((t) => t !== '');
    for (let i = 0; i < 2000; i++) {
      const text = Array.from({ length: Math.floor(r() * 60) }, () => String.fromCharCode(Math.floor(r() * 128))).join('');
      expect(Text.tokens(text)).toEqual(unicode(text));
    }
    // Past ASCII, diacritics go and other scripts' letters stay.
    expect(Text.tokens('Café Ñandú — 東京 2020')).toEqual(['cafe', 'nandu', '東京', '2020']);
    const analyzed = Features.analyze('Bone Health', 'Vitamin D matters. Older adults fracture less!\nData from 2010.', 0);
    expect(analyzed.text).toEqual(analyzed.sentences.flat());
    expect(analyzed.sentences).toEqual([Text.stemsOf('Vitamin D matters.'), Text.stemsOf('Older adults fracture less!'), Text.stemsOf('Data from 2010.')]);
  });

  test('behavior: text is stemmed as the whole-text Unicode analysis stems it, however many tokens the table has held', () => {
    let seed = 11;
    const r = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const pick = <T,>(list: readonly T[]) => list[Math.floor(r() * list.length)]!;
    const letters = [...'aAbBcdeEfghiIjklmnNoOpqrsStuvwxyz0123456789'];
    // Past ASCII: accented letters and combining marks (dropped from Latin letters), Greek (Σ lowercases by its
    // neighbours), typographic punctuation, İ (a mark once lowercased), CJK, a surrogate pair, a mark after a space.
    const others = [...'éÉñüβαΣσςΔµ’“”–—±×東京İ', '\u0301', '\u0308', '😀', 'ﬁ'];
    const word = (mixed: boolean) => Array.from({ length: 1 + Math.floor(r() * 12) }, () => (mixed && r() < 0.3 ? pick(others) : pick(letters))).join('');
    // Words seen again and again, and new ones: past 32,768 tokens the table grows, past its limit it starts again.
    const common = Array.from({ length: 300 }, () => word(false));
    const separators = [' ', ', ', '. ', '.', '-', '\n', '(', ') ', "'", '  ', ':'];
    const whole = (text: string) => Text.tokens(text).map(Text.stem);
    for (const table of [new TextStems(Text.stem, whole), new TextStems(Text.stem, whole, 500)]) {
      for (let i = 0; i < 4000; i++) {
        const mixed = r() < 0.3;
        const text = Array.from({ length: Math.floor(r() * 40) }, () => (r() < 0.7 ? pick(common) : word(mixed)) + pick(separators)).join('');
        expect(table.of(text)).toEqual(whole(text));
      }
      // A long token is left unstemmed, as FTS5's porter tokenizer leaves it.
      expect(table.of(`Running ${'X'.repeat(70)} runs`)).toEqual(['run', 'x'.repeat(70), 'run']);
      // Σ before a separator and a letter is not a word's last letter: lowercased by the whole text, as it is there.
      expect(table.of('ΑΣ.Β ΑΣ Β')).toEqual(whole('ΑΣ.Β ΑΣ Β'));
    }
    expect(Text.stemsOf('Café au lait, RUNNING')).toEqual(['cafe', 'au', 'lait', 'run']);
  });

  test('behavior: every feature of a chunk that answers most of a question, by hand', () => {
    // Key stems vitamin, d, defici, rais, fractur (IDF 2), risk, 2010: a weight of 8.
    const f = features('Vitamin D deficiency raises fracture risk in 2010', 'Fracture risk', 'Low vitamin levels were common. Deficiency raises fractures in older adults. Data from 2010 and 2010 again.', { fractur: 2 });
    // 19 tokens against an average of 12: a length norm of 0.25 + 0.75 x 19 / 12 = 1.4375, and k1 1.2.
    const w = (tf: number) => (tf * 2.2) / (tf + 1.2 * 1.4375);
    // Title counts three times: fractur 3 + 1, risk 3; 2010 twice in the text.
    expect(f.bm25).toBeCloseTo((3 * w(1) + 2 * w(4) + w(3) + w(2)) / 8, 12);
    expect(f.coverage).toBe(7 / 8); // all but "d"
    expect(f.titleCoverage).toBe(3 / 8);
    // Six word pairs asked; the text holds "deficiency raises" and "raises fracture", the title "fracture risk".
    expect(f.bigrams).toBe(2 / 6);
    expect(f.titleBigrams).toBe(1 / 6);
    expect(f.sentenceCoverage).toBe(4 / 8); // the second sentence: defici, rais, fractur
    expect(f.windowCoverage).toBe(5 / 8); // with the third: and 2010
    expect(f.proximity).toBe(1); // the title holds two key stems side by side
    expect(f.partialMatch).toBe(0);
    // 2010 twice, against a length ratio of 19 / 12, and title counting three times over four.
    expect(f.numberMatch).toBeCloseTo((4.4 / (2 + 1.2 * (0.25 + (0.75 * 19) / 12)) / 4) / 8, 12);
    // With no term model, soft sentence coverage falls back to the exact one.
    expect([f.softPpmi, f.softLsa, f.sentenceSoft]).toEqual([0, 0, 4 / 8]);
  });

  test('behavior: a key stem the chunk holds only a longer or shorter form of counts as a partial match', () => {
    const f = features('microscale scaffolds', 'Scaffolds', 'Scaffolds at micros sizes.');
    expect(Text.queryTerms('microscale scaffolds').map((t) => t.stem)).toEqual(['microscal', 'scaffold']);
    expect(f.coverage).toBe(1 / 2);
    expect(f.partialMatch).toBe(1 / 2); // "micro" begins "microscal"
  });

  test('behavior: sentence features read the sentences given, also when they are not the text\'s stems in order', () => {
    const s = stats({});
    const q = Features.question(Text.queryTerms('vitamin fractures'), 'vitamin fractures', s);
    const names = (values: number[]) => Object.fromEntries(Features.names.map((name, i) => [name, values[i]!]));
    // As an analysis makes it: the sentences are the text.
    const analyzed = names(Features.extract(q, Features.analyze('', 'Vitamin intake. Fractures fell.', 0), s));
    expect([analyzed.coverage, analyzed.sentenceCoverage, analyzed.windowCoverage]).toEqual([1, 0.5, 1]);
    // Made by hand: the one sentence holds both terms, the text neither.
    const made = names(Features.extract(q, { title: [], text: ['bone', 'marrow'], sentences: [['vitamin', 'fractur']], tokenCount: 0 }, s));
    expect([made.coverage, made.sentenceCoverage, made.proximity]).toEqual([0, 1, 0]);
  });

  test('behavior: a question whose stem is given twice weighs it twice, as the sums over its stems always did', () => {
    const s = stats({});
    const q = Features.question([{ stem: 'bone' }, { stem: 'bone' }, { stem: 'marrow' }], 'bone marrow', s);
    const c = Features.analyze('', 'Bone of the body.', 0);
    expect(q.totalIdf).toBe(2); // the weights are by distinct stem
    expect(Features.extract(q, c, s)[1]).toBe(2 / 2); // bone, counted twice, over a weight of 2
    expect(Features.extract(q, c, s)).toEqual(Features.extract(q, c, s));
  });
});
