/**
 * What a question asks for, read from its wording: the kind of fact that answers it (a figure, a rule or
 * recommendation, a verdict, steps), whether it is about the present, and whether it asks what changed. A claim to
 * check (SciFact's "X causes Y") asks for none of these, and is answered as before.
 */

import * as Text from '../retrieval/Text.js';

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
};

const figure =
  /\b(how (much|many|long|often|far|big|large|small|hot|cold|warm|high|low|fast|early|late|old|wide|deep|thick|heavy)|what (percentage|percent|share|proportion|ratio|temperature|time|age|size|amount|number|figure|price|rate|dose|distance|width|length|weight|speed|pace|threshold|cut-?off|limit)|(at|by|until|from) what (time|age|point|temperature)|how soon|when should|what'?s the (cut-?off|limit|threshold|number|figure|price|rate)|per (cent|month|year|week|day|hour|kwh|loaf))\b/i;
const steps = /\b(how (do|can|should) (i|you|we|one)|how to|what are the steps|step by step|walk me through|what'?s the (process|method|routine)|what order)\b/i;
const rule = /\b(rule|should (i|you|we|one|people|beginners|someone)|recommend\w*|advice|advise|best (way|practice|time)|what (kind|type|sort) of|which (one|kind|type)|ok to|okay to|allowed|must|need to|when (do|does|should|is it)|what to do|what'?s (the|a) (right|good|best))\b/i;
const verdict = /^\s*(is|are|does|do|did|can|could|was|were|would|will|has|have)\b|\b(worth (it|the)|good idea|bad idea|overrated|pros and cons|a mistake)\b/i;
const present = /\b(now|nowadays|current(ly)?|still|today|these days|at the moment|anymore|any more|latest|most recent|present(ly)?|this year)\b/i;
const change = /\b(chang\w*|used to|no longer|revis\w*|rethink|reconsider\w*|switch(ed)? from|moved (away )?from|mind|compared (to|with) (before|earlier|then)|over the years|evolv\w*|differ\w* from (before|earlier))\b/i;

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
  return { wants, present: interrogative && present.test(q), change: interrogative && change.test(q), interrogative };
}
