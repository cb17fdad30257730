/**
 * What a question asks for, read from its wording: the kind of fact that answers it (a figure, a rule or
 * recommendation, a verdict, steps), whether it is about the present, and whether it asks what changed. A claim to
 * check (SciFact's "X causes Y") asks for none of these, and is answered as before.
 */

import * as Text from '../retrieval/Text.js';
import * as Measures from './Measures.js';

/** The kind of statement that answers a question. */
export type Wanted = 'figure' | 'rule' | 'verdict' | 'steps' | 'any';

export type Asked = {
  wants: Wanted;
  /** "now", "still", "these days": the newest statement answers. */
  present: boolean;
  /** "what changed", "used to", "how has ... changed": the old view and the new one, each with its date. */
  change: boolean;
  /** The question is put as a question (not a claim or a topic). */
  interrogative: boolean;
  /** What a figure question measures ("how warm": a temperature), when its wording says. */
  measure: Measures.Measure | undefined;
};

const figure =
  /\b(how (much|many|long|often|frequently|far|big|large|small|hot|cold|warm|dry|wet|high|low|fast|slow|early|late|old|wide|narrow|deep|thick|thin|heavy|strong)|what (percentage|percent|share|proportion|ratio|temperature|time|age|size|amount|number|figure|price|cost|rate|dose|dosage|distance|width|length|height|depth|weight|speed|pace|threshold|cut-?off|limit|ph|grit|gauge|moisture( content)?|humidity|level|concentration|capacity|volume|rating|score|wattage|voltage)|(at|by|until|from) what (time|age|point|temperature)|how soon|when should|what'?s the (cut-?off|limit|threshold|number|figure|price|rate)|per (cent|month|year|week|day|hour|kwh|loaf))\b/i;
const steps = /\b(how (do|can|should) (i|you|we|one)|how to|what are the steps|step by step|walk me through|what'?s the (process|method|routine)|what order)\b/i;
const rule = /\b(rule|should (i|you|we|one|people|beginners|someone)|recommend\w*|advice|advise|best (way|practice|time)|what (kind|type|sort) of|which (one|kind|type)|ok to|okay to|allowed|must|need to|when (do|does|should|is it)|what to do|what'?s (the|a) (right|good|best))\b/i;
const verdict = /^\s*(is|are|does|do|did|can|could|was|were|would|will|has|have)\b|\b(worth (it|the)|good idea|bad idea|overrated|pros and cons|a mistake)\b/i;
const present = /\b(now|nowadays|current(ly)?|still|today|these days|at the moment|anymore|any more|latest|most recent|present(ly)?|this year)\b/i;
/** Asking how a view changed, not about a change as a thing ("a water change", "a tyre change"). */
const change =
  /\b(what('?s| has| have)? changed|(has|have|did|does)\b.{0,80}\bchang(e|ed)\b|chang(ed|ing|e) (his|her|their|your|its|my) (mind|view|advice|approach|recommendation|rule|thinking|position)|changed (since|over|between)|used to|no longer|revis\w*|rethink|reconsider\w*|switch(ed)? from|moved (away )?from|over the years|evolv\w*|differ\w* from (before|earlier)|compared (to|with) (before|earlier|then))\b/i;

/** Reads what a question asks for. */
export function read(question: string): Asked {
  const q = question.trim();
  const interrogative = Text.isQuestion(q);
  let wants: Wanted = 'any';
  if (interrogative) {
    if (figure.test(q)) wants = 'figure';
    else if (steps.test(q)) wants = 'steps';
    else if (rule.test(q)) wants = 'rule';
    else if (verdict.test(q)) wants = 'verdict';
  }
  return { wants, present: interrogative && present.test(q), change: interrogative && change.test(q), interrogative, measure: interrogative ? Measures.asked(q) : undefined };
}
