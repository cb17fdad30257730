import type { Citation } from '../contract/Query.js';
import * as Planner from '../retrieval/Planner.js';
import type { Evidence } from '../retrieval/Evidence.js';
import * as Text from '../retrieval/Text.js';
import * as Asked from './Asked.js';
import * as Rationale from './Rationale.js';
import type { ScoredSentence } from './Rationale.js';
import * as Measures from './Measures.js';
import * as Roles from './Roles.js';
import * as Sentences from './Sentences.js';
import type { Synthesis, SynthesisInput, Synthesizer } from './Synthesizer.js';
import { citation } from './Synthesizer.js';

/** The answer when retrieval found nothing relevant: says so, cites nothing. */
export const nothingFound =
  'The indexed content in this scope does not answer this question, so there is no grounded answer to give. The charge for this query was reversed.';

/**
 * How widely a claim's answer draws: the best item, and a runner-up that ranks nearly as well or states the finding
 * more plainly (a second source is cited only when it is likely relevant too). Questions gather by `Shape`, below.
 */
const breadth = {
  focused: { items: 2, runnerUp: 0.7, outdo: 1.3, second: { relative: 0.6, absolute: 0.5 } },
} as const;
/** Sentences shorter than this are headings or fragments: never chosen on their own. */
const minLength = 20;
/** A statement giving a figure of the measure asked for weighs this much more, one giving none this much less. */
const measureYes = 1.5;
const measureNo = 0.6;
/** A chosen sentence shorter than this is a lead-in ("Anchor sleep."): the next sentence comes along. */
const leadIn = 40;
/** In a broad answer, an item speaks only with a sentence worth this share of the best one: the rest is off the question. */
const onQuestion = 0.35;

/**
 * How much a sentence is worth as the answer, beyond its coverage of the question: questions put by others and
 * refusals never answer, set-ups and asides hardly; a sentence without the kind of fact asked for (a figure, a rule, a
 * verdict) answers less; a view given as held before answers less and one given as held now more, strongly so for a
 * question about the present.
 */
function weight(sentence: string, whole: string, asked: Asked.Asked): number {
  let w = 1;
  if (Roles.isQuestion(sentence) || Roles.declines(sentence)) w *= 0.05;
  else if (Roles.isSetup(sentence) || Roles.isAside(sentence)) w *= 0.3;
  // A question about how a view changed asks for the views, whatever kind of fact each holds.
  if (asked.wants !== 'any' && !asked.change) w *= Roles.holds(whole, asked.wants) ? 1.25 : 0.45;
  // A figure of the measure asked for ("how warm": degrees), not some other figure that shares the question's words.
  if (asked.measure && !asked.change) w *= Measures.gives(Roles.spoken(whole), asked.measure) ? measureYes : measureNo;
  if (asked.present && !asked.change) {
    const era = Roles.era(sentence);
    if (era === 'now') w *= 1.4;
    else if (era === 'before') w *= 0.4;
  } else if (asked.interrogative && !asked.change) {
    // A view the expert says they have left is not their answer, whenever the question is asked.
    const era = Roles.era(sentence);
    if (era === 'now') w *= 1.15;
    else if (era === 'before') w *= 0.6;
  }
  return w;
}

/** A sentence as an answer, with the sentences that complete it (the set-up it leans on, the figure it hands over to). */
type Candidate = ScoredSentence & { value: number; with: ScoredSentence[]; says: boolean };

/**
 * Each sentence as the core of an answer: joined with the sentence before when it leans back on it or is too short
 * to stand alone ("Mine is €800."), and with the sentence after when it hands over to it, the next is a short
 * completion, or the next states an exception. Worth what `relevance` makes of it (for a claim, the rationale
 * model's reading; for a question, its coverage of the question), weighed by its role and by what the whole says (a
 * figure in the completion counts).
 */
function units(
  all: ScoredSentence[],
  asked: Asked.Asked,
  recent: number,
  relevance: (core: ScoredSentence[], parts: ScoredSentence[], context: ScoredSentence[]) => number,
  says: (core: ScoredSentence[]) => boolean,
): Candidate[] {
  const out: Candidate[] = [];
  const usable = (s: ScoredSentence | undefined): s is ScoredSentence =>
    s !== undefined && !Roles.isQuestion(s.sentence) && !Roles.isSetup(s.sentence) && !Roles.isStamp(s.sentence) && !repeatsTitle(s);
  // For a question about the present, a view given as held before does not come along to complete one held now.
  const current = asked.present && !asked.change;
  const completing = (s: ScoredSentence | undefined): s is ScoredSentence => usable(s) && !(current && Roles.era(s.sentence) === 'before');
  all.forEach((s, i) => {
    if (!usable(s)) return;
    const before = all[i - 1];
    const after = all[i + 1];
    const short = s.sentence.length < minLength;
    const leaning = Roles.leansBack(s.sentence) || short;
    const lean = completing(before) && leaning;
    // A sentence that leans on one it cannot have (a question put, a greeting, nothing) does not stand alone: "You
    // don't need that." answers nothing by itself. A claim's sentences are read as the abstract gives them.
    if (asked.interrogative && leaning && !lean && !(completing(after) && short)) return;
    // A question's answer goes on into the next sentence of the same turn (the figure after the rule, the reason, the
    // exception); a claim's finding stands alone unless it hands over.
    const sameTurn = usable(after) && !Roles.startsTurn(after.sentence);
    const completes = completing(after) && (Roles.leansForward(s.sentence) || s.sentence.length < leadIn || after.sentence.length < leadIn || Roles.qualifies(after.sentence) || (asked.interrogative && sameTurn));
    const parts = [...(lean ? [before] : []), s, ...(completes ? [after] : [])];
    const text = parts.map((p) => p.sentence).join(' ');
    if (text.length < minLength) return;
    // What the talk is about around it: the two sentences before (a question put, a topic named) and the one after.
    const context = all.slice(Math.max(0, i - 2), i + 2);
    // The statement itself (with what it leans on) is told apart from what completes it: its own words tip the
    // balance, so the sentence before an answer does not lead with the answer's words.
    const core = lean ? [before, s] : [s];
    out.push({ ...s, value: relevance(core, parts, context) * weight(s.sentence, text, asked) * recent, with: parts, says: says(core) });
  });
  return out;
}

/** An item's opening line that restates its title ("Sleep Notes from Nadia, spring 2023."): a heading, not a statement. */
function repeatsTitle(s: ScoredSentence): boolean {
  if (s.e.ordinal !== 0 || s.position > 1) return false;
  const title = new Set(Text.stemsOf(s.e.title).filter((t) => !Text.stopwords.has(t)));
  const said = Text.stemsOf(Roles.spoken(s.sentence)).filter((t) => !Text.stopwords.has(t));
  const shared = said.filter((t) => title.has(t)).length;
  return shared >= 2 && shared / said.length >= 0.6;
}

/** Items in the order retrieval returned them, each with its chunks and its best score. */
function itemsOf(evidence: Evidence[]) {
  const items: { itemId: string; score: number; chunks: Evidence[]; publishedAt: number | null; profileId: string }[] = [];
  for (const e of evidence) {
    const item = items.find((i) => i.itemId === e.itemId);
    if (item) item.chunks.push(e);
    else items.push({ itemId: e.itemId, score: e.score, chunks: [e], publishedAt: e.publishedAt, profileId: e.scoped.profile.id });
  }
  return items;
}

/** For a question about the present, newer items weigh more: the newest 1, the oldest 0.6; for other questions, 0.9. */
function recency(evidence: Evidence[], asked: Asked.Asked): (e: Evidence) => number {
  const dates = evidence.map((e) => e.publishedAt).filter((d): d is number => d !== null);
  if (!asked.interrogative || asked.change || dates.length < 2) return () => 1;
  const [oldest, newest] = [Math.min(...dates), Math.max(...dates)];
  if (newest === oldest) return () => 1;
  // About the present, the newest statement; otherwise a newer one a little, as an expert's later word stands.
  const span = asked.present ? 0.4 : 0.1;
  return (e) => (e.publishedAt === null ? 1 - span / 2 : 1 - span + (span * (e.publishedAt - oldest)) / (newest - oldest));
}

/**
 * The share of a statement's worth that comes from what its chunk is about (its words and its title), taken from
 * what its neighbours share: 0.3 answered most on the yardstick's tuned part (0.1 to 0.5 tried).
 */
const topicShare = 0.3;
const chunkStemSets = new WeakMap<Evidence, Set<string>>();
/** The stems of a chunk's text and its item's title: what the chunk is about. */
function chunkStems(e: Evidence): Set<string> {
  let found = chunkStemSets.get(e);
  if (!found) chunkStemSets.set(e, (found = new Set([...Text.stemsOf(Roles.spoken(e.chunkText)), ...Text.stemsOf(e.title)])));
  return found;
}

/** Each chunk's sentences as answers to the question, best first. */
export function ranker(input: Pick<SynthesisInput, 'question' | 'evidence' | 'terms'> & { sentences: Rationale.Scorer }): (e: Evidence) => Candidate[] {
  const asked = Asked.read(input.question);
  const recent = recency(input.evidence, asked);
  const top = Math.max(...input.evidence.map((e) => e.score), 1e-9);
  const scorer = input.sentences;
  // A claim to check is answered by the sentence the rationale model reads as its finding. A question is answered
  // by the words that cover it: the rationale model, fit on scientific abstracts, weighs for less on talk and notes.
  // The experts' names say where content comes from, not what it says; a speaker's label is not what is said.
  const names = new Set(input.evidence.flatMap((e) => [...e.profileStems]));
  const weights = [...input.terms.idf].filter(([stem]) => !names.has(stem));
  const total = weights.reduce((sum, [, w]) => sum + w, 0);
  const coverage = (stems: ReadonlySet<string>) => (total > 0 ? weights.reduce((sum, [stem, w]) => sum + (stems.has(stem) ? w : 0), 0) / total : 0);
  // Whether a statement itself says something of the question (a lead-in such as "You don't need that." does not):
  // its words, or a figure of the measure asked for ("twenty-six degrees" says how warm).
  const says = (core: ScoredSentence[]) => {
    if (!asked.interrogative) return true;
    const text = core.map((p) => Roles.spoken(p.sentence)).join(' ');
    return coverage(new Set(Text.stemsOf(text))) > 0 || (asked.measure !== undefined && Measures.gives(text, asked.measure));
  };
  const relevance = asked.interrogative
    ? (core: ScoredSentence[], parts: ScoredSentence[], context: ScoredSentence[]) => {
        const stemsOf = (list: ScoredSentence[]) => new Set(list.flatMap((p) => Text.stemsOf(Roles.spoken(p.sentence))));
        const own = stemsOf(core);
        const p = Math.max(...core.map((x) => x.probability));
        // What the whole chunk is about counts a little too: "Keep the jar between twenty-four and twenty-six
        // degrees" answers "how warm should a starter be" in a video about building a starter, without the word.
        const topic = coverage(chunkStems(parts[0]!.e)) * topicShare;
        const said = 0.1 * coverage(own) + (0.45 - topicShare / 2) * coverage(stemsOf(parts)) + (0.25 - topicShare / 2) * coverage(stemsOf(context)) + topic + 0.2 * scorer.focusCoverage(stemsOf(parts));
        return said * (0.6 + 0.4 * Math.sqrt(p)) * (parts[0]!.e.score / top) ** 0.3;
      }
    : (_core: ScoredSentence[], parts: ScoredSentence[]) => Math.max(...parts.map((x) => x.probability));
  const memo = new Map<string, Candidate[]>();
  return (e) => {
    let found = memo.get(e.chunkId);
    if (!found) memo.set(e.chunkId, (found = units(scorer.sentences(e), asked, recent(e), relevance, says).sort((a, b) => b.value - a.value)));
    return found;
  };
}

const month = (t: number) => new Date(t).toLocaleDateString('en-GB', { month: 'long', year: 'numeric', timeZone: 'UTC' });

/**
 * The offline synthesizer: an answer made only of sentences from the evidence, each followed by the number of its
 * citation. Each sentence is chosen for stating what the question asks (the rationale model's reading, weighed by
 * the sentence's role and the kind of fact it holds), with the neighbours that complete it.
 */
export function create(): Synthesizer {
  return {
    async synthesize({ question, evidence, terms, mode, sentences, experts: askedOf = [], similarity }: SynthesisInput) {
      if (evidence.length === 0) return { answer: nothingFound, citations: [] };
      const scorer = sentences ?? Rationale.scorer(terms, evidence);
      const asked = Asked.read(question);
      const ranked = ranker({ question, evidence, terms, sentences: scorer });
      if (similarity && asked.interrogative) await weighByMeaning(evidence.flatMap(ranked), question, similarity);
      const items = itemsOf(evidence);
      const focused = mode === undefined || mode === 'lookup' || mode === 'claim_extraction';
      let chosen: Candidate[];
      let dated = false;
      const experts = new Set([...named(question, evidence), ...askedOf.filter((id) => evidence.some((e) => e.scoped.profile.id === id))]);
      // A question about one named expert is answered from that expert's content.
      const own = experts.size === 1 ? items.filter((i) => experts.has(i.profileId)) : items;
      if (own.length > 0 && own.length < items.length) items.splice(0, items.length, ...own);
      if (asked.change) {
        chosen = thenAndNow(items, ranked, experts);
        dated = true;
      } else if (mode === 'comparison') {
        chosen = broad(items, ranked, question, true);
      } else if (focused || asked.present || asked.wants !== 'any') {
        chosen = direct(items, ranked, asked, experts);
      } else {
        chosen = broad(items, ranked, question, false);
        dated = mode === 'trend_brief';
      }
      // A question whose best statement covers too little of it has no answer here: nothing is cited, nothing charged.
      const strongest = Math.max(...evidence.map((e) => e.score));
      if (asked.interrogative && (chosen[0]?.value ?? 0) < noAnswer.value && strongest < noAnswer.evidence) {
        return { answer: nothingFound, citations: [], notes: ['No statement in the evidence covers enough of the question to answer it'] };
      }
      if (chosen.length === 0) {
        // Nothing but fragments: quote the opening of the best chunk.
        const opening = scorer.sentences(evidence[0]!).slice(0, 2);
        chosen.push(...opening.map((s) => ({ ...s, value: s.probability, with: opening, says: true })));
      }
      const complete = completed(chosen);
      const order = new Map(evidence.map((e, i) => [e.chunkId, i]));
      complete.sort((a, b) => order.get(a.e.chunkId)! - order.get(b.e.chunkId)! || a.position - b.position);
      if (dated) complete.sort((a, b) => (a.e.publishedAt ?? Infinity) - (b.e.publishedAt ?? Infinity) || order.get(a.e.chunkId)! - order.get(b.e.chunkId)! || a.position - b.position);
      return { ...render(complete, dated, chosen), ...(asked.interrogative && { ceiling: ceiling(chosen[0], asked, mode) }) };
    },
  };
}

/**
 * How many of the best statements are read for their meaning: seven and the question make one run of the encoder
 * (about 25 ms on two cores); 8, 12 and 24 answered no better on the yardstick's tuned part, 4 worse.
 */
const readForMeaning = 7;
/**
 * How much closeness in meaning weighs: a statement's worth times e^(1.5 × (cosine − 0.3)). 1.5 answered most on the
 * yardstick's tuned part (0.5 to 2 tried); on the held-out experts it adds about 2 points of right answers.
 */
const meaningWeight = 1.5;
const meaningCentre = 0.3;

/**
 * The best statements' worth weighed by how close each is in meaning to the question, as the sentence encoder reads
 * both: words the question does not use can still say what it asks. An encoder that fails leaves the words alone.
 */
async function weighByMeaning(all: Candidate[], question: string, similarity: NonNullable<SynthesisInput['similarity']>): Promise<void> {
  const top = [...all].sort((a, b) => b.value - a.value).slice(0, readForMeaning);
  if (top.length === 0) return;
  const sims = await similarity(question, top.map((c) => c.with.map((w) => Roles.spoken(w.sentence)).join(' ')));
  top.forEach((c, i) => (c.value *= Math.exp(meaningWeight * ((sims[i] ?? meaningCentre) - meaningCentre))));
}

/**
 * A direct answer: the item whose sentence states the answer best, and a runner-up that ranks nearly as well or states
 * it more plainly. For a question (not a claim), an item lower in the ranking that states the asked-for fact speaks
 * before a higher one that is only on topic. A question naming several experts hears from each.
 */
function direct(items: ReturnType<typeof itemsOf>, ranked: (e: Evidence) => Candidate[], asked: Asked.Asked, experts: Set<string>): Candidate[] {
  return asked.interrogative ? answering(items, ranked, experts) : claimed(items, ranked);
}

/** How widely a question's answer gathers statements: how many, from how many items, how close in value to the best. */
type Shape = { units: number; items: number; close: number; sentences: number; perItem: number };
/** A direct answer: statements close to the best, from at most two items, six sentences at most. */
const answer: Shape = { units: 3, items: 2, close: 0.6, sentences: 6, perItem: 1 };
/** An overview, a timeline or an inventory: what bears on the question across up to four items, a few from each. */
const overview: Shape = { units: 5, items: 4, close: onQuestion, sentences: 8, perItem: 0.8 };
/** Each expert a question names: their own best statements, briefly. */
const perExpert: Shape = { units: 2, items: 2, close: 0.6, sentences: 3, perItem: 1 };
/** An expert a question names speaks when their best statement is worth this share of the best of all. */
const expertFloor = 0.25;

/**
 * Statements for an answer, best first: each next one the worth most (a further statement from an item already heard
 * worth a little less in an overview), close enough in value to the best, within the shape's bounds. A statement
 * running into one already chosen extends it (the set-up, then the figure).
 */
function gather(all: Candidate[], shape: Shape): Candidate[] {
  const sorted = [...all].sort((a, b) => b.value - a.value);
  const first = sorted.find((c) => c.says) ?? sorted[0];
  if (!first || first.value <= 0) return [];
  const chosen: Candidate[] = [{ ...first, with: [...first.with] }];
  const pool = all.filter((c) => c !== first);
  const length = () => chosen.reduce((n, x) => n + x.with.length, 0);
  const sameSentence = (c: Candidate, x: Candidate) => x.e.chunkId === c.e.chunkId && x.with.some((w) => c.with.some((v) => v.position === w.position));
  const worth = (c: Candidate) => c.value * shape.perItem ** chosen.filter((x) => x.e.itemId === c.e.itemId).length;
  while (chosen.length < shape.units && pool.length > 0) {
    let best = 0;
    pool.forEach((c, i) => {
      if (worth(c) > worth(pool[best]!)) best = i;
    });
    const [c] = pool.splice(best, 1);
    if (!c || worth(c) < shape.close * first.value) break;
    // A statement that says nothing of the question itself only borrows its neighbour's words: it adds nothing.
    if (!c.says) continue;
    const joins = chosen.find((x) => sameSentence(c, x));
    if (joins) {
      const more = c.with.filter((v) => !joins.with.some((w) => w.position === v.position));
      if (more.length > 0 && length() + more.length <= shape.sentences) joins.with = [...joins.with, ...more].sort((a, b) => a.position - b.position);
      continue;
    }
    const speaking = new Set(chosen.map((x) => x.e.itemId));
    if (!speaking.has(c.e.itemId) && speaking.size >= shape.items) continue;
    // Brief, as an answer should be: a statement that would take it past its bound stays out.
    if (length() + c.with.length > shape.sentences) continue;
    chosen.push({ ...c, with: [...c.with] });
  }
  return chosen;
}

/**
 * The answer to a question: the statement worth most, wherever it ranks, and the statements close to it in value
 * (the rule and its exception, the figure and what it applies to). A question naming several experts hears each of
 * them in turn, from their own content.
 */
function answering(items: ReturnType<typeof itemsOf>, ranked: (e: Evidence) => Candidate[], experts: Set<string>): Candidate[] {
  const all = items.flatMap((item) => item.chunks.flatMap(ranked));
  if (experts.size < 2) return gather(all, answer);
  const top = Math.max(0, ...all.map((c) => c.value));
  return [...experts]
    .map((id) => gather(all.filter((c) => c.e.scoped.profile.id === id), perExpert))
    .filter((theirs) => (theirs[0]?.value ?? 0) >= expertFloor * top)
    .sort((a, b) => b[0]!.value - a[0]!.value)
    .flat();
}

/** The finding of a claim: the best item's, and a runner-up's that ranks nearly as well or states it more plainly. */
function claimed(items: ReturnType<typeof itemsOf>, ranked: (e: Evidence) => Candidate[]): Candidate[] {
  const shape = breadth.focused;
  const top = Math.max(...items.map((i) => i.score));
  const chosen: Candidate[] = [];
  for (const item of items) {
    if (chosen.length > 0 && new Set(chosen.map((c) => c.e.itemId)).size >= shape.items) break;
    const list = item.chunks.flatMap(ranked).sort((a, b) => b.value - a.value);
    const first = list[0];
    if (!first) continue;
    const outdoes = first.value > shape.outdo * Math.max(...chosen.map((c) => c.value));
    if (chosen.length > 0 && item.score < shape.runnerUp * top && !outdoes) continue;
    chosen.push(first);
    const next = list[1];
    if (chosen.length === 1 && next && next.value >= shape.second.relative * first.value && next.probability >= shape.second.absolute) chosen.push(next);
  }
  return chosen;
}

/**
 * A broad answer (overview, timeline, comparison, inventory): from each item its sentence that bears most on the
 * question, items whose best is far off the question dropped; a comparison hears each of its subjects.
 */
function broad(items: ReturnType<typeof itemsOf>, ranked: (e: Evidence) => Candidate[], question: string, comparison: boolean): Candidate[] {
  const all = items.flatMap((item) => item.chunks.flatMap(ranked));
  const chosen = gather(all, overview);
  if (comparison) {
    // Each side of a comparison is heard: the best statement naming a subject nothing chosen names yet.
    for (const subject of Planner.subjects(question)) {
      const stems = Text.stemsOf(subject);
      const names = (c: Candidate) => stems.length > 0 && c.with.some((w) => stems.every((s) => new Set(Text.stemsOf(w.sentence)).has(s)));
      if (chosen.some(names)) continue;
      const found = all.filter(names).sort((a, b) => b.value - a.value)[0];
      if (found) chosen.push(found);
    }
  }
  return chosen;
}

/**
 * What changed: the answer's statements, with the view as held before (a statement that says it is the old view, or
 * else the oldest) and as held now (one that says it is the current view, or else the newest), each dated.
 */
function thenAndNow(items: ReturnType<typeof itemsOf>, ranked: (e: Evidence) => Candidate[], experts: Set<string>): Candidate[] {
  const all = items.flatMap((item) => item.chunks.flatMap(ranked)).sort((a, b) => b.value - a.value);
  const top = all[0]?.value ?? 0;
  const bearing = all.filter((c) => c.value >= onQuestion * top);
  const dated = bearing.filter((c) => c.e.publishedAt !== null);
  const pick = (era: Roles.Era, newest: boolean) =>
    bearing.find((c) => Roles.era(c.with.map((w) => w.sentence).join(' ')) === era) ??
    [...dated].sort((a, b) => (newest ? b.e.publishedAt! - a.e.publishedAt! : a.e.publishedAt! - b.e.publishedAt!) || b.value - a.value)[0];
  const chosen = answering(items, ranked, experts);
  const said = (c: Candidate) => chosen.some((x) => x.e.chunkId === c.e.chunkId && x.with.some((w) => w.position === c.position));
  for (const c of [pick('before', false), pick('now', true)]) {
    if (!c || said(c)) continue;
    // Both views are given, briefly: past the bound, a view comes without its completions.
    const length = chosen.reduce((n, x) => n + x.with.length, 0);
    chosen.push(length + c.with.length > changeBound ? { ...c, with: [c] } : c);
  }
  return chosen;
}

/** The most sentences an answer about what changed runs to before the views it adds lose their completions. */
const changeBound = 8;

/** The experts a question names (by a word of their name or handle), among those the evidence comes from. */
function named(question: string, evidence: Evidence[]): Set<string> {
  // A name is written capitalized ("Nadia", "Ferreira-Holm") or as a handle: "how many hours" names no "Kettle Hour".
  const written = question.match(/(?<![\p{L}])(\p{Lu}[\p{L}'’-]*|@[a-z0-9-]+)/gu) ?? [];
  const asked = new Set(written.flatMap((w) => Text.tokens(w)));
  const experts = new Set<string>();
  for (const e of evidence) {
    // Words of the name as written ("Ines" is not the stem "in"), not stopwords ("de", "van").
    const own = Text.tokens(`${e.scoped.profile.name} ${e.scoped.profile.slug}`).filter((t) => !Text.stopwords.has(t));
    if (own.some((t) => asked.has(t))) experts.add(e.scoped.profile.id);
  }
  return experts;
}

/** Below this value, the best statement covers too little of the question to be relied on. */
const weakLead = 0.2;
/**
 * When the best statement is worth less than this, and no evidence scores above the second bar, the evidence covers
 * too little of the question to answer it at all. Evidence that retrieval scores well can answer in other words than
 * the question's ("How warm should a starter be?" and "twenty-six degrees"), so it is never refused here. On the
 * yardstick this refuses three unanswerable questions and no answer that was right (docs/retrieval.md).
 */
const noAnswer = { value: 0.18, evidence: 0.15 };

/**
 * How much confidence an extracted answer to a question supports. Measured on the yardstick (docs/retrieval.md): no
 * signal the extractive path has separates answers right nine times in ten, so such an answer is at most medium; it is
 * low when its lead statement lacks the kind of fact asked for or covers little of the question, when the question
 * asks for steps, or when it is an overview or an inventory stitched from sentences (low answers are right about 1
 * time in 6; a comparison, which hears each side, is right about as often as a direct answer).
 */
function ceiling(lead: Candidate | undefined, asked: Asked.Asked, mode: SynthesisInput['mode']): NonNullable<Synthesis['ceiling']> {
  const said = lead?.with.map((w) => w.sentence).join(' ') ?? '';
  if (!lead || lead.value < weakLead) return { confidence: 'low', reason: 'The best statement in the evidence covers little of the question: read the cited passages before relying on the answer.' };
  if (asked.wants !== 'any' && !Roles.holds(said, asked.wants)) return { confidence: 'low', reason: `The answer's statements do not hold the kind of fact asked for (${asked.wants === 'steps' ? 'steps' : `a ${asked.wants}`}).` };
  if (asked.wants === 'steps') return { confidence: 'low', reason: 'Steps are given as the sentences that state them, and may be incomplete: read the cited passages.' };
  if (mode === 'summary' || mode === 'source_inventory') return { confidence: 'low', reason: 'An overview stitched from sentences of the sources may miss points: read the cited passages.' };
  return { confidence: 'medium', reason: 'An extractive answer quotes the sentences that best state the answer; without a model to read them, it is at most medium confidence.' };
}

/** The chosen sentences with what completes each, once each. */
function completed(chosen: Candidate[]): ScoredSentence[] {
  const out: ScoredSentence[] = [];
  for (const c of chosen) for (const s of c.with) if (!out.some((o) => o.e.chunkId === s.e.chunkId && o.position === s.position)) out.push(s);
  return out;
}

/**
 * The date a statement was made when its chunk dates its paragraphs ("October 5, 2026." before a note): the nearest
 * date line before it; else undefined, and the item's date stands.
 */
const dateLines = new WeakMap<Evidence, (number | undefined)[]>();
function dateLine(s: ScoredSentence): number | undefined {
  let lines = dateLines.get(s.e);
  if (!lines) dateLines.set(s.e, (lines = Sentences.split(s.e.chunkText).map((x) => Roles.dateOf(x))));
  for (let i = Math.min(s.position, lines.length - 1); i >= 0; i--) {
    const t = lines[i];
    if (t !== undefined && !Number.isNaN(t)) return t;
  }
  return undefined;
}

/** The answer text: each sentence followed by its citation's number; dated answers say each sentence's date. */
function render(chosen: ScoredSentence[], dated: boolean, cores: Candidate[]) {
  const citations: Citation[] = [];
  const numbers = new Map<string, number>();
  let lastDate: string | undefined;
  const parts = chosen.map((s) => {
    let n = numbers.get(s.e.chunkId);
    if (n === undefined) {
      // A citation points where its chunk's statement is made (for a transcript, the moment it is said), not at the
      // set-up that comes along with it.
      const core = cores.find((c) => c.e.chunkId === s.e.chunkId) ?? s;
      citations.push(citation(s.e, s.e.chunkText.indexOf(core.sentence)));
      n = citations.length;
      numbers.set(s.e.chunkId, n);
    }
    const when = dated ? (dateLine(s) ?? s.e.publishedAt) : null;
    const date = when !== null ? month(when) : undefined;
    const prefix = date && date !== lastDate ? `${date}: ` : '';
    lastDate = date ?? lastDate;
    return `${prefix}${s.sentence.replace(/^[-*•]\s+/, '')} [${n}]`;
  });
  return { answer: parts.join(' '), citations };
}
