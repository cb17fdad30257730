import fs from 'node:fs';
import readline from 'node:readline';
import path from 'node:path';
import { z } from 'zod';
import { ServiceError } from '../errors/ServiceError.js';

/** A BEIR-format dataset: corpus, queries and graded relevance judgements. */
export type Dataset = {
  corpus: { id: string; title: string; text: string }[];
  queries: Map<string, string>;
  qrels: Map<string, Map<string, number>>;
};

const CorpusLine = z.object({ _id: z.union([z.string(), z.number()]).transform(String), title: z.string().default(''), text: z.string() }).passthrough();
const QueryLine = z.object({ _id: z.union([z.string(), z.number()]).transform(String), text: z.string() }).passthrough();

async function* lines(file: string): AsyncGenerator<string> {
  const stream = readline.createInterface({ input: fs.createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of stream) if (line.trim() !== '') yield line;
}

/** One JSON line checked against its schema; a bad line is reported by file and line number. */
async function* records<T>(file: string, schema: z.ZodType<T, z.ZodTypeDef, unknown>): AsyncGenerator<T> {
  let number = 0;
  for await (const line of lines(file)) {
    number += 1;
    let parsed: z.SafeParseReturnType<unknown, T>;
    try {
      parsed = schema.safeParse(JSON.parse(line));
    } catch {
      throw new ServiceError('invalid_request', `${path.basename(file)} line ${number} is not JSON`);
    }
    if (!parsed.success) throw new ServiceError('invalid_request', `${path.basename(file)} line ${number}: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    yield parsed.data;
  }
}

/** Reads `corpus.jsonl`, `queries.jsonl` and a qrels TSV (default `qrels/test.tsv`, else `qrels/train.tsv`). */
export async function load(directory: string, qrelsFile?: string): Promise<Dataset> {
  const corpusFile = path.join(directory, 'corpus.jsonl');
  const queriesFile = path.join(directory, 'queries.jsonl');
  const qrelsPath = qrelsFile ?? [path.join(directory, 'qrels', 'test.tsv'), path.join(directory, 'qrels', 'train.tsv')].find((f) => fs.existsSync(f));
  for (const f of [corpusFile, queriesFile, qrelsPath]) {
    if (!f || !fs.existsSync(f)) throw new ServiceError('invalid_request', `not a BEIR dataset: missing ${f ?? path.join(directory, 'qrels/*.tsv')}`);
  }
  const corpus: Dataset['corpus'] = [];
  for await (const doc of records(corpusFile, CorpusLine)) corpus.push({ id: doc._id, title: doc.title, text: doc.text });
  const queries = new Map<string, string>();
  for await (const q of records(queriesFile, QueryLine)) queries.set(q._id, q.text);
  const qrels: Dataset['qrels'] = new Map();
  for await (const line of lines(qrelsPath!)) {
    const [qid, docId, score] = line.split('\t');
    if (qid === undefined || docId === undefined || score === undefined || qid === 'query-id') continue;
    if (!queries.has(qid)) continue;
    if (!qrels.has(qid)) qrels.set(qid, new Map());
    qrels.get(qid)!.set(docId, Number(score));
  }
  return { corpus, queries, qrels };
}

/** nDCG@10 with linear gains (as pytrec_eval and the BEIR paper), Recall@k, and reciprocal rank within k, for one ranked list of document ids. */
export function metrics(ranked: string[], relevant: Map<string, number>): { ndcg10: number; recall10: number; recall100: number; mrr10: number } {
  const gain = (id: string) => relevant.get(id) ?? 0;
  const dcg = ranked.slice(0, 10).reduce((sum, id, i) => sum + gain(id) / Math.log2(i + 2), 0);
  const ideal = [...relevant.values()].sort((a, b) => b - a).slice(0, 10).reduce((sum, g, i) => sum + g / Math.log2(i + 2), 0);
  const positives = [...relevant].filter(([, g]) => g > 0).map(([id]) => id);
  const recall = (k: number) => (positives.length === 0 ? 0 : positives.filter((id) => ranked.slice(0, k).includes(id)).length / positives.length);
  const first = ranked.slice(0, 10).findIndex((id) => gain(id) > 0);
  return { ndcg10: ideal > 0 ? dcg / ideal : 0, recall10: recall(10), recall100: recall(100), mrr10: first < 0 ? 0 : 1 / (first + 1) };
}

/** A percentile of a list of numbers (nearest rank). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
