import { describe, expect, test } from 'vitest';
import type { Stats } from '../src/retrieval/index/Stats.js';
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

  test('behavior: a question whose stem is given twice weighs it twice, as the sums over its stems always did', () => {
    const s = stats({});
    const q = Features.question([{ stem: 'bone' }, { stem: 'bone' }, { stem: 'marrow' }], 'bone marrow', s);
    const c = Features.analyze('', 'Bone of the body.', 0);
    expect(q.totalIdf).toBe(2); // the weights are by distinct stem
    expect(Features.extract(q, c, s)[1]).toBe(2 / 2); // bone, counted twice, over a weight of 2
    expect(Features.extract(q, c, s)).toEqual(Features.extract(q, c, s));
  });
});
