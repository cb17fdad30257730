/**
 * What a sentence of expert content does: states something, puts a question (a listener's, a host's), sets the
 * scene, or goes aside; what kind of fact it holds; and whether it gives a view as the speaker held it before or
 * holds it now. Read from wording alone, so it works the same on a transcript, a post or a note.
 */
import type { Wanted } from './Asked.js';

/**
 * A transcript's speaker label ("Nadia Ferreira-Holm: ", "Dr. Ilse Varga: "), which is not part of what is said: one to
 * four capitalized words, so "The exception: " or "Sam writes in: " is what is said, not who says it.
 */
const speaker = /^\p{Lu}[\p{L}.'’-]*(?: \p{Lu}[\p{L}.'’-]*){0,3}:\s+/u;

/** A sentence that opens a speaker's turn in a transcript. */
export function startsTurn(sentence: string): boolean {
  return speaker.test(sentence);
}

export function spoken(sentence: string): string {
  return sentence.replace(speaker, '');
}

/** A question put in the content, or one relayed ("A listener asks whether...", "Priya writes in:"). */
const relayed =
  /\b(writes in|wrote in|emailed|messaged|asks?|asked|asking|wants to know|wondering|question (is|was|from|comes)|listener|viewer|reader|subscriber|caller|dm'?d)\b[^.!]*$/i;
export function isQuestion(sentence: string): boolean {
  const said = spoken(sentence).trim();
  if (/\?["'”’)]*$/.test(said)) return true;
  // "Sam writes in: my colony has been queenless..." puts someone else's question in their words.
  if (/^[\p{L} .'’-]{1,60}\b(writes in|wrote in|asks|asked|emailed|messaged|wants to know|wonders|wondered)\s*:/iu.test(said)) return true;
  // "Priya writes in: ..." or "A listener asked whether ..." introduces someone else's question.
  if (/:\s*$/.test(said)) return relayed.test(said);
  return /^(a |one |our |my |several |many |some |a few |lots |a lot )?(of you|listeners?|viewers?|readers?|subscribers?|members?|callers?|people|someone|somebody|you)\b[^.]{0,60}\b(ask|asks|asked|keep asking|wrote in|writes in|want to know|wants to know|wonder|wondered|emailed|messaged)\b/i.test(said);
}

/** The expert declining to answer ("I'm not going to talk about crypto", "that's outside what I cover"). */
const declining =
  /\b(not going to (talk|get into|comment|answer|cover|give)|won'?t (talk|get into|comment|answer|cover|give)|can'?t (advise|comment|answer|help) (on|with)|(outside|beyond) (my|what i) |not (my|an) (area|expertise|field)|not qualified|i don'?t (cover|do|give) (that|advice|tax advice|legal advice)|ask (a|an|your) (lawyer|accountant|doctor|clinician|professional|adviser|advisor)|(talk|speak) to (a|an|your) (lawyer|accountant|adviser|advisor|professional)|(a )?(conversation|question) for (a|an|your) (lawyer|accountant|doctor|gp|clinician|adviser|advisor|professional|vet|solicitor)|not (something|a question) i (can|will|'?ll) (answer|advise on|cover))\b/i;
export function declines(sentence: string): boolean {
  return declining.test(spoken(sentence));
}

/** A sentence that qualifies the one before it: an exception or a condition. */
export function qualifies(sentence: string): boolean {
  return /^(unless|except|the exception|but only|only if|as long as|provided|with one exception|one exception)\b/i.test(spoken(sentence).trim());
}

/** Scene-setting: greetings, introductions, what the episode will cover. */
const setup =
  /^(explain|tell (us|me|listeners|everyone)|talk (us|me) through|walk (us|me) through|give (us|me)|short notes|notes from|for anyone new|welcome|hi|hello|hey|thanks|thank you|this week|in this (video|episode|post)|let'?s (start|talk|get|dive|begin|turn|move)|before we (start|get)|my guest|joining me|so today|today (we|we'?re|on|i want to talk)|i want to (talk|start)|we'?re going to|first,? a (quick|little))\b|\b(welcome (back|to)|today we'?re|on today'?s|let me (introduce|set the scene)|stay tuned|coming up)\b/i;
/** A speaker introducing themselves or the episode ("I'm Tomas and this is episode 4"). */
const introduction = /^(i'?m|i am|my name is|this is) \p{Lu}\p{L}+|\bthis is (episode|part|show) \w+|^(this|today'?s) (episode|video|show) is (about|all about)/iu;
export function isSetup(sentence: string): boolean {
  const said = spoken(sentence).trim();
  return setup.test(said) || introduction.test(said);
}

/** An aside: a digression the speaker marks as one. */
const aside = /^(by the way|as an aside|side note|incidentally|fun fact|random aside|(quick )?tangent|off topic)\b|\b(as an aside|by the way|side note)\b/i;
export function isAside(sentence: string): boolean {
  return aside.test(spoken(sentence).trim());
}

const numberWords =
  /\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|half|third|quarter|double|twice|triple|dozen|percent|per cent)\b/i;
const digit = /\d/;
const ruleWords =
  /\b(should|shouldn'?t|must|never|always|don'?t|do not|avoid|aim for|keep|make sure|rule|recommend\w*|i'?d|i would|i tell|i advise|the key|best|try to|need to|only (if|when)|unless|at least|at most|no more than|no later than|before|after|stop|start|use|go for|stick to|skip|choose|pick|prefer|switch)\b/i;
const verdictWords = /\b(yes|no|not|worth|isn'?t|aren'?t|doesn'?t|don'?t|won'?t|better|worse|best|mistake|overrated|fine|good|bad|recommend|depends|absolutely|definitely|never|i'?d|i would|wouldn'?t)\b/i;
const stepWords = /\b(first|then|next|after that|finally|once|step|until|start by|begin by|before you)\b/i;

const monthNames = 'jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t(ember)?)?|oct(ober)?|nov(ember)?|dec(ember)?';
const weekday = '(mon|tues|wednes|thurs|fri|satur|sun)day';
const dates = new RegExp(`\\b((${monthNames})\\.? \\d{1,2}(st|nd|rd|th)?,? (19|20)\\d\\d|\\d{1,2}(st|nd|rd|th)? (${monthNames}),? (19|20)\\d\\d|(${monthNames}) (19|20)\\d\\d|(in|since|from|by|until|of|back in|early|late|mid) (19|20)\\d\\d|(19|20)\\d\\d)\\b`, 'gi');

/** A line that only dates what follows ("January 16, 2023.") or names it (a heading): it states nothing. */
export function isStamp(sentence: string): boolean {
  return dateOf(sentence) !== undefined || isHeading(sentence);
}

/** A short line with no closing punctuation: a heading, not a statement. A list item ("- 1 part starter") is not one. */
function isHeading(sentence: string): boolean {
  const said = spoken(sentence).trim();
  return said.length < 60 && !/^([-*•]|\d+[.)])\s/.test(said) && !/[.!?:]["'”’)]*$/.test(said);
}

/** When a date line says, as a time (UTC midnight), if the sentence is only a date ("October 5, 2026.", "2025-03-03."). */
export function dateOf(sentence: string): number | undefined {
  const said = spoken(sentence).trim();
  const undated = said.replace(/\b(19|20)\d\d-\d\d-\d\d\b/g, '').replace(dates, '').replace(new RegExp(`\\b${weekday}\\b`, 'gi'), '').replace(/\b\d{1,2}(st|nd|rd|th)?\b/g, '');
  if (undated.replace(/[\s.,:;–—-]/g, '') !== '') return undefined;
  const parsed = Date.parse(`${said.replace(new RegExp(`\\b${weekday},?\\s*`, 'gi'), '').replace(/(\d)(st|nd|rd|th)\b/g, '$1').replace(/[.:;]+$/, '')} UTC`);
  return Number.isNaN(parsed) ? Number.NaN : parsed;
}

/** Does the sentence hold the kind of fact asked for? */
export function holds(sentence: string, wants: Wanted): boolean {
  const said = spoken(sentence);
  switch (wants) {
    case 'figure': {
      // A date says when, not how much: years and calendar dates do not count as the figure asked for.
      const undated = said.replace(dates, ' ');
      return digit.test(undated) || numberWords.test(undated);
    }
    case 'rule':
      return ruleWords.test(said);
    case 'verdict':
      return verdictWords.test(said);
    case 'steps':
      return stepWords.test(said) || ruleWords.test(said) || digit.test(said);
    case 'any':
      return true;
  }
}

/** A view given as held before: "I used to...", "back in 2023 I said...", "my old advice". */
const before =
  /\b(i used to|we used to|used to (tell|recommend|say|think|believe|do|use|suggest|advise)|back (in|then)|at the time|previously|originally|i was wrong|my old|my (earlier|previous|original)|for years i|i once|i no longer|no longer|in the past|when i started|years ago|i (said|wrote|told you|recommended) (in|back)|old (rule|advice|view))\b/i;
/** A view given as held now: "these days I...", "since 2024 I...", "I've changed my mind". */
const now =
  /\b(now|nowadays|these days|today i|currently|at this point|since (19|20)\d\d|i'?ve (switched|moved|changed|come round|come around|settled)|changed my mind|my (current|new|updated) (view|advice|rule|approach|recommendation|setup|routine|method|thinking|position|answer|plan)|my current|i now|these days i|going forward|from now on|any more|anymore|instead)\b/i;

export type Era = 'before' | 'now' | 'neither';

/** Whether a sentence gives a view as held before or now. A sentence naming both ("I used to X; now I Y") is now. */
export function era(sentence: string): Era {
  const said = spoken(sentence);
  const isNow = now.test(said);
  if (isNow) return 'now';
  return before.test(said) ? 'before' : 'neither';
}

/** A sentence that leans on the one before it ("That's why...", "It only works if..."). */
export function leansBack(sentence: string): boolean {
  const said = spoken(sentence).trim();
  // "These days ...", "This year ...": a time, not a reference back.
  if (/^(this|these|that) (days?|years?|weeks?|months?|time|morning|evening|season|spring|summer|autumn|fall|winter)\b/i.test(said)) return false;
  return /^(that|this|it|those|these|so|which|but|and|because|then|otherwise|except|unless|only|the exception|one exception)\b/i.test(said);
}

/** A sentence that hands over to the one after it ("Here's the rule:", "Two things:"). */
export function leansForward(sentence: string): boolean {
  return /:\s*$/.test(spoken(sentence).trim());
}
