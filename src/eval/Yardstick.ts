/**
 * The answer yardstick: judged questions over conversational, multi-format expert content (the demo experts and the
 * experts written for it, `data/yardstick/`), asked through `profile_query` as a paying caller asks them, each scored
 * on the key facts its answer must state, the passages it must cite, and whether it refused when it should have.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../config/Config.js';
import * as Config from '../config/Config.js';
import { QueryMode, QueryScope } from '../contract/Query.js';
import * as Demo from '../demo/Demo.js';
import * as Services from '../Services.js';
import * as Stores from '../store/Store.js';
import * as Keys from '../auth/Keys.js';
import * as Items from '../store/Items.js';
import * as Tools from '../../tools/Tools.js';
import * as Numbers from '../retrieval/Numbers.js';

export const defaultDirectory = path.join(projectRoot, 'data', 'yardstick');

export const QuestionKind = z.enum(['figure', 'rule', 'verdict', 'current', 'changed', 'howto', 'comparison', 'summary', 'timeline', 'inventory', 'two_experts', 'unanswerable']);
export type QuestionKind = z.infer<typeof QuestionKind>;

const Passage = z.object({ file: z.string().min(1), quote: z.string().min(3) }).strict();

export const Question = z
  .object({
    id: z.string().min(1),
    question: z.string().min(3),
    kind: QuestionKind,
    scope: QueryScope.optional(),
    mode: QueryMode.optional(),
    answerable: z.boolean(),
    facts: z.array(z.array(z.string().min(1)).min(1)).optional(),
    passages: z.array(Passage).optional(),
    cite: z.enum(['all', 'any']).optional(),
    note: z.string().optional(),
  })
  .strict()
  .refine((q) => !q.answerable || ((q.facts?.length ?? 0) > 0 && (q.passages?.length ?? 0) > 0), { message: 'an answerable question needs facts and passages' });
export type Question = z.infer<typeof Question>;

/** Text as the scorer compares it: case, spacing, quotes, dashes and transcript voice tags ignored. */
export function normalize(text: string): string {
  return text
    .replace(/<\/?v[^>]*>/g, '')
    .replace(/[’‘]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(/[‐‑‒–—-]+/g, ' ')
    .replace(/\s+/g, ' ')
    .toLowerCase()
    .trim();
}

/** A question as the yardstick asks it: held out when its expert was written apart from the answerer. */
export type Asked = Question & { heldOut: boolean };

/**
 * The experts whose questions are held out (`held-out.json`, slugs): written apart from the answerer by someone who
 * read neither it nor the other questions, never fit on, reported apart.
 */
export function heldOutExperts(directory = defaultDirectory): Set<string> {
  const file = path.join(directory, 'held-out.json');
  return new Set(fs.existsSync(file) ? z.array(z.string()).parse(JSON.parse(fs.readFileSync(file, 'utf8'))) : []);
}

/** Every question file of a yardstick directory, in file order; a file named for a held-out expert is held out. */
export function loadQuestions(directory = defaultDirectory): Asked[] {
  const folder = path.join(directory, 'questions');
  const heldOut = heldOutExperts(directory);
  const questions: Asked[] = [];
  for (const file of fs.readdirSync(folder).filter((f) => f.endsWith('.json')).sort()) {
    const parsed = z.array(Question).safeParse(JSON.parse(fs.readFileSync(path.join(folder, file), 'utf8')));
    if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    questions.push(...parsed.data.map((q) => ({ ...q, heldOut: heldOut.has(file.replace(/\.json$/, '')) })));
  }
  const ids = new Set<string>();
  for (const q of questions) {
    if (ids.has(q.id)) throw new Error(`duplicate question id ${q.id}`);
    ids.add(q.id);
  }
  return questions;
}

export type YardstickStore = { services: Services.Services; itemOf: Map<string, string>; close(): Promise<void> };

/** A temporary store with the demo experts and the yardstick's, ingested as `npm start` ingests the demo. */
export async function buildStore(options: { directory?: string; demoDirectory?: string; database?: Config.Config['database'] } = {}): Promise<YardstickStore> {
  const temporary = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-yardstick-'));
  // On PostgreSQL the store is a temporary database beside the operator's.
  const database = options.database?.engine === 'postgres' ? await Stores.temporaryDatabase(options.database.url) : undefined;
  const config = Config.load({
    ...(database ? { DATABASE_URL: database.url } : { DATABASE_PATH: path.join(temporary, 'yardstick.db') }),
    LOG_LEVEL: 'silent',
    ENVIRONMENT: 'test',
    DEMO_DATA: 'false',
  });
  const services = await Services.create(config);
  const itemOf = new Map<string, string>();
  try {
    for (const directory of [options.demoDirectory ?? Demo.defaultDirectory, options.directory ?? defaultDirectory]) {
      await Demo.load(services, { directory, chunkTargetTokens: config.chunkTargetTokens });
      const manifest = await Demo.readManifest(directory);
      for (const p of manifest.profiles) for (const c of p.channels) for (const item of c.items) itemOf.set(item.file, Items.itemId(c.id, item.externalId));
    }
  } catch (error) {
    await services.close();
    await database?.drop();
    fs.rmSync(temporary, { recursive: true, force: true });
    throw error;
  }
  return {
    services,
    itemOf,
    async close() {
      await services.close();
      await database?.drop();
      fs.rmSync(temporary, { recursive: true, force: true });
    },
  };
}

type Answer = {
  answer: string;
  citations: { itemId: string; text: string }[];
  confidence: 'high' | 'medium' | 'low';
  retrieval: { noRelevantContent: boolean; diagnostics: { outcome: string } };
};

/** How one question went. */
export type Outcome = {
  id: string;
  kind: QuestionKind;
  answerable: boolean;
  /** Every key fact stated (answerable questions). */
  correct: boolean;
  /** Every gold passage (or one, with `cite: any`) among the citations. */
  cited: boolean;
  /** Answered nothing and charged nothing. */
  refused: boolean;
  /** Refused by the preflight, before any payment was asked for (not charged, then given back). */
  refusedBeforePayment: boolean;
  /** Written apart from the answerer: never fit on, reported apart. */
  heldOut: boolean;
  /** Right as the yardstick judges it: correct with the right passage cited, or refused when unanswerable. */
  right: boolean;
  confidence: 'high' | 'medium' | 'low';
  answer: string;
};

type Level = { answers: number; right: number };

export type YardstickResult = {
  questions: number;
  answerable: { asked: number; correct: number; cited: number; right: number };
  /** Refused at all (nothing charged in the end), and refused before any payment was asked for. */
  unanswerable: { asked: number; refused: number; refusedBeforePayment: number };
  confidence: Record<'high' | 'medium' | 'low', Level>;
  kinds: Record<string, { asked: number; right: number }>;
  outcomes: Outcome[];
};

/**
 * Words that deny what follows them within its clause ("don't switch it off" does not state "switch it off"; "never
 * retard it below four degrees" does not state "four degrees"; "it's not hard: switch it off" does).
 */
const negation = /(?:\b(?:not|no|never|without|nor|neither)|n't)\s+(?:[^\s,.;:!?]+\s+){0,3}$/;

/**
 * Where `fact` is stated in `said`: each occurrence, denied or not. A quantity is never denied by a negation before it:
 * "never more than six weeks" and "not below four degrees" state the bound.
 */
function occurrences(said: string, fact: string): { denied: boolean }[] {
  const out: { denied: boolean }[] = [];
  const quantity = Numbers.inText(fact).length > 0;
  for (let at = said.indexOf(fact); at !== -1; at = said.indexOf(fact, at + 1)) out.push({ denied: !quantity && negation.test(said.slice(Math.max(0, at - 40), at)) });
  return out;
}

/**
 * Does the answer state one string of every fact group, and not deny it in the same answer? An occurrence right after
 * a negation ("don't switch it off" for "switch it off") does not state the fact, and an answer that both states and
 * denies a fact contradicts itself: neither counts as stating it.
 */
export function statesFacts(answer: string, facts: string[][]): boolean {
  const said = normalize(answer.replace(/\s*\[\d+\]/g, ''));
  return facts.every((group) => {
    const found = group.flatMap((fact) => occurrences(said, normalize(fact)));
    return found.some((o) => !o.denied) && !found.some((o) => o.denied);
  });
}

/** Does a cited chunk hold the passage? A quote a chunk boundary cuts counts when either half is in the chunk. */
export function holds(chunkText: string, quote: string): boolean {
  const chunk = normalize(chunkText);
  const q = normalize(quote);
  if (chunk.includes(q)) return true;
  const words = q.split(' ');
  if (words.length < 8) return false;
  const half = Math.floor(words.length / 2);
  return chunk.includes(words.slice(0, half).join(' ')) || chunk.includes(words.slice(half).join(' '));
}

/** Asks every question through `profile_query` (synthesized, paid from credits) and scores the answers. */
export async function evaluate(store: YardstickStore, questions: Asked[], options: { onProgress?: (done: number, total: number) => void } = {}): Promise<YardstickResult> {
  const kept = store.services.store;
  const account = await kept.accounts.create({ name: `yardstick-${Date.now()}` });
  // The caller may read every expert, private channels included, as a member would.
  for (const profile of await kept.profiles.list()) await kept.profiles.addMember(profile.id, account.id);
  await kept.ledger.move({ accountId: account.id, kind: 'grant', creditsDelta: 10_000_000 });
  const key = (await Keys.issue(kept, { kind: 'api_key', accountId: account.id })).token;
  const outcomes: Outcome[] = [];
  for (const q of questions) {
    const atProfile = q.scope?.kind === 'profile' ? q.scope.slug : undefined;
    const r = (await Tools.invoke({
      services: store.services,
      name: 'profile_query',
      args: { question: q.question, paymentMode: 'credits', ...(q.scope && !atProfile && { scope: q.scope }), ...(q.mode && { queryMode: q.mode }) },
      presented: { apiKey: key, origin: 'yardstick' },
      binding: atProfile ? { kind: 'profile', slug: atProfile } : { kind: 'global' },
    })) as Answer;
    const refused = r.citations.length === 0;
    // After the hold, a reader that finds no statement abstains and the charge is given back ('low_confidence').
    const refusedBeforePayment = refused && r.retrieval.noRelevantContent && r.retrieval.diagnostics.outcome !== 'low_confidence';
    const citedPassage = (p: { file: string; quote: string }) => {
      const itemId = store.itemOf.get(p.file);
      return r.citations.some((c) => c.itemId === itemId && holds(c.text, p.quote));
    };
    const passages = q.passages ?? [];
    const cited = passages.length > 0 && (q.cite === 'any' ? passages.some(citedPassage) : passages.every(citedPassage));
    const correct = q.answerable && !refused && statesFacts(r.answer, q.facts ?? []);
    outcomes.push({
      id: q.id,
      kind: q.kind,
      answerable: q.answerable,
      correct,
      cited,
      refused,
      refusedBeforePayment,
      heldOut: q.heldOut,
      right: q.answerable ? correct && cited : refusedBeforePayment,
      confidence: r.confidence,
      answer: r.answer,
    });
    options.onProgress?.(outcomes.length, questions.length);
  }
  return summarize(outcomes);
}

export function summarize(outcomes: Outcome[]): YardstickResult {
  const answerable = outcomes.filter((o) => o.answerable);
  const unanswerable = outcomes.filter((o) => !o.answerable);
  const confidence: YardstickResult['confidence'] = { high: { answers: 0, right: 0 }, medium: { answers: 0, right: 0 }, low: { answers: 0, right: 0 } };
  const kinds: YardstickResult['kinds'] = {};
  for (const o of outcomes) {
    // A refusal carries no confidence in an answer: calibration reads the answers given.
    if (!o.refused) {
      confidence[o.confidence].answers += 1;
      if (o.right) confidence[o.confidence].right += 1;
    }
    const k = (kinds[o.kind] ??= { asked: 0, right: 0 });
    k.asked += 1;
    if (o.right) k.right += 1;
  }
  return {
    questions: outcomes.length,
    answerable: {
      asked: answerable.length,
      correct: answerable.filter((o) => o.correct).length,
      cited: answerable.filter((o) => o.cited).length,
      right: answerable.filter((o) => o.right).length,
    },
    unanswerable: { asked: unanswerable.length, refused: unanswerable.filter((o) => o.refused).length, refusedBeforePayment: unanswerable.filter((o) => o.refusedBeforePayment).length },
    confidence,
    kinds,
    outcomes,
  };
}
