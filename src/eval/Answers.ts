/**
 * Answer quality, as a paying caller gets it: each judged claim is asked through `profile_query` (synthesized, with
 * an API key) on a store of the dataset, and the answer is scored against the relevance judgements and the rationale
 * sentences. Then the claims' relevant documents are removed and a sample is asked again, with off-topic questions,
 * to measure abstention.
 */
import fs from 'node:fs';
import readline from 'node:readline';
import { z } from 'zod';
import * as Sentences from '../answer/Sentences.js';
import * as Text from '../retrieval/Text.js';
import * as Keys from '../auth/Keys.js';
import * as Tools from '../../tools/Tools.js';
import type { Dataset } from './Beir.js';
import type { EvalStore } from './Evaluate.js';
import { evalSlug } from './Evaluate.js';

/** Rationale sentences per claim and document (SciFact's evidence file: query_id, doc_id, sentences). */
export type Evidence = Map<string, Map<string, number[]>>;

const EvidenceLine = z.object({ query_id: z.union([z.string(), z.number()]).transform(String), doc_id: z.union([z.string(), z.number()]).transform(String), sentences: z.array(z.number().int()) }).passthrough();
const SentencesLine = z.object({ _id: z.union([z.string(), z.number()]).transform(String), sentences: z.array(z.string()) }).passthrough();

async function* jsonLines(file: string): AsyncGenerator<unknown> {
  for await (const line of readline.createInterface({ input: fs.createReadStream(file, 'utf8'), crlfDelay: Infinity })) if (line.trim() !== '') yield JSON.parse(line);
}

export async function loadEvidence(file: string): Promise<Evidence> {
  const evidence: Evidence = new Map();
  for await (const raw of jsonLines(file)) {
    const line = EvidenceLine.parse(raw);
    const docs = evidence.get(line.query_id) ?? new Map<string, number[]>();
    docs.set(line.doc_id, [...(docs.get(line.doc_id) ?? []), ...line.sentences]);
    evidence.set(line.query_id, docs);
  }
  return evidence;
}

/** A document's sentences as the dataset splits them (`corpus.sentences.jsonl`). */
export async function loadSentences(file: string): Promise<Map<string, string[]>> {
  const sentences = new Map<string, string[]>();
  for await (const raw of jsonLines(file)) {
    const line = SentencesLine.parse(raw);
    sentences.set(line._id, line.sentences);
  }
  return sentences;
}

/** Questions no scientific-abstract corpus answers, for the off-topic abstention rate. */
export const offTopic = [
  'How do I change a flat tire on a road bike?',
  'What is the best way to laminate butter for croissants?',
  'Who won the 1998 football world cup final?',
  'How do I reset a forgotten router admin password?',
  'What are good beginner chords for ukulele?',
  'How long should I steep green tea?',
  'What is the capital of Australia?',
  'How do I remove a red wine stain from a carpet?',
  'Which houseplants tolerate low light best?',
  'How do I write a cover letter for a barista job?',
  'What is the rule for castling in chess?',
  'How do I descale an espresso machine?',
  'What should I pack for a weekend hiking trip?',
  'How do I change the oil in a lawn mower?',
  'What is a good stretching routine before running?',
  'How do I set up a VPN on my phone?',
  'What are the rules of pickleball?',
  'How do I season a cast iron skillet?',
  'Which knot should I use to tie a boat to a dock?',
  'How do I repot an orchid?',
];

/** The share of an answer sentence's words found in a rationale sentence. */
export function overlap(answer: string, rationale: string): number {
  const a = new Set(Text.stemsOf(answer));
  if (a.size === 0) return 0;
  const r = new Set(Text.stemsOf(rationale));
  let shared = 0;
  for (const t of a) if (r.has(t)) shared += 1;
  return shared / a.size;
}

type Answer = { answer: string; citations: { itemId: string }[]; confidence: 'high' | 'medium' | 'low'; retrieval: { noRelevantContent: boolean } };

export type AnswerResult = {
  claims: number;
  answerRecall: number;
  citationPrecision: number;
  rationaleOverlap: number;
  abstention: { removedEvidence: { asked: number; rate: number }; offTopic: { asked: number; rate: number } };
  confidence: Record<'high' | 'medium' | 'low', { answers: number; citesRelevant: number }>;
};

/** Scores answers on every claim that has evidence, then abstention on `removed` of them with their documents gone. */
export async function evaluate(
  store: EvalStore,
  dataset: Dataset,
  input: { evidence: Evidence; sentences: Map<string, string[]>; limit?: number; removed?: number; onProgress?: (done: number, total: number) => void },
): Promise<AnswerResult> {
  const kept = store.services.store;
  const account = await kept.accounts.create({ name: `eval-${Date.now()}` });
  await kept.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 10_000_000 });
  const key = (await Keys.issue(kept, { kind: 'api_key', accountId: account.id })).token;
  const itemOf = new Map([...store.docOf].map(([item, doc]) => [doc, item]));
  const ask = async (question: string) =>
    (await Tools.invoke({
      services: store.services,
      name: 'profile_query',
      args: { question, paymentMode: 'credits' },
      presented: { apiKey: key, origin: 'eval' },
      binding: { kind: 'profile', slug: evalSlug },
    })) as Answer;

  const claims = [...input.evidence.keys()].filter((q) => dataset.queries.has(q) && dataset.qrels.has(q)).slice(0, input.limit);
  const confidence: AnswerResult['confidence'] = { high: { answers: 0, citesRelevant: 0 }, medium: { answers: 0, citesRelevant: 0 }, low: { answers: 0, citesRelevant: 0 } };
  let recalled = 0;
  let cited = 0;
  let citedRelevant = 0;
  let sentences = 0;
  let overlapping = 0;
  let done = 0;
  const total = claims.length + Math.min(input.removed ?? 100, claims.length) + offTopic.length;
  for (const qid of claims) {
    const relevant = new Set(dataset.qrels.get(qid)!.keys());
    const r = await ask(dataset.queries.get(qid)!);
    const docs = [...new Set(r.citations.map((c) => store.docOf.get(c.itemId)!))];
    const hits = docs.filter((d) => relevant.has(d)).length;
    if (hits > 0) recalled += 1;
    cited += docs.length;
    citedRelevant += hits;
    const level = confidence[r.confidence];
    level.answers += 1;
    if (hits > 0) level.citesRelevant += 1;
    const rationale = [...input.evidence.get(qid)!].flatMap(([doc, indices]) => indices.map((i) => input.sentences.get(doc)?.[i]).filter((s): s is string => s !== undefined));
    for (const sentence of Sentences.split(r.answer.replace(/\s*\[\d+\]/g, ''))) {
      sentences += 1;
      if (rationale.some((rs) => overlap(sentence, rs) >= 0.6)) overlapping += 1;
    }
    input.onProgress?.(++done, total);
  }

  const abstains = (r: Answer) => r.retrieval.noRelevantContent || r.citations.length === 0;
  const removedClaims = claims.slice(0, input.removed ?? 100);
  for (const qid of removedClaims) for (const doc of dataset.qrels.get(qid)!.keys()) if (itemOf.has(doc)) await kept.items.remove(itemOf.get(doc)!);
  let removedAbstained = 0;
  for (const qid of removedClaims) {
    if (abstains(await ask(dataset.queries.get(qid)!))) removedAbstained += 1;
    input.onProgress?.(++done, total);
  }
  let offTopicAbstained = 0;
  for (const question of offTopic) {
    if (abstains(await ask(question))) offTopicAbstained += 1;
    input.onProgress?.(++done, total);
  }
  const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b);
  return {
    claims: claims.length,
    answerRecall: ratio(recalled, claims.length),
    citationPrecision: ratio(citedRelevant, cited),
    rationaleOverlap: ratio(overlapping, sentences),
    abstention: { removedEvidence: { asked: removedClaims.length, rate: ratio(removedAbstained, removedClaims.length) }, offTopic: { asked: offTopic.length, rate: ratio(offTopicAbstained, offTopic.length) } },
    confidence,
  };
}
