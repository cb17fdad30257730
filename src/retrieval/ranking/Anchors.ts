import * as Numbers from '../Numbers.js';
import * as Text from '../Text.js';

/** Something the question insists on: a quoted phrase, a name, or a number. Found only if all its stems are. */
export type Anchor = { text: string; kind: 'phrase' | 'name' | 'number'; stems: string[] };

/** A chunk as anchors see it: its stems in order and as a set, and the stems that name its profile. */
export type Chunk = { stems: string[]; stemSet: ReadonlySet<string>; profileStems?: ReadonlySet<string> };

const words = (list: string) => list.trim().split(/\s+/);

/** Words that ask: a capitalized word after them is capitalized for a reason ("Does Owen ..."). */
const askWords = new Set(
  words(`what which who whom whose when where why how does do did is are was were am be been can could should would will
  shall may might must has have had i i'm i've i'd i'll don't doesn't didn't isn't aren't wasn't weren't can't couldn't
  shouldn't wouldn't won't haven't hasn't hadn't tell give list show summarize summarise compare explain describe
  according find name define identify outline discuss`),
);

/** Words that open a clause without asking: the clause still starts after them ("So Home brewing ..."). */
const leadWords = new Set(
  words(`also please hi hello hey dear thanks thank sorry yes yeah ok okay well so then now still just really actually
  basically honestly generally usually normally typically overall lately recently currently today tonight yesterday
  tomorrow again anyway besides however meanwhile otherwise plus say suppose imagine assume consider given based
  regarding re btw quick follow maybe perhaps apparently since unlike like versus vs compared beyond despite except
  including per via within without toward towards upon among across around behind beside near past unless whether
  though although yet even ever never always often sometimes every many much several another last next first second
  third finally lastly instead rather kindly briefly exactly specifically especially mostly mainly roughly let lets`),
);

/**
 * Frequent English words, by stem: capitalized at the start of a clause, such a word is no evidence of a name. A word
 * missing here is taken for a name there, so the list leans long: a false anchor makes a query abstain.
 */
const commonStems = new Set(
  words(`home house room kitchen garden yard door window floor wall bed table chair family friend parent mother father mom
  dad kid child children baby people person man woman men women boy girl team group company business job work career
  office school class teacher student college university book story article post blog video podcast episode show
  music song movie film game sport art science data study research report paper evidence result idea question answer
  problem issue reason example rule plan method system process advice tip step guide recipe way thing part place
  point side end start change difference effect risk benefit cost price rate fee tax money cash savings budget debt
  loan income salary pay bank market stock bond fund share investment portfolio retirement pension insurance mortgage
  rent account card credit value number amount level size type kind sort form case fact topic area field line name
  word page source quote note update version rest lot half dose diet exercise workout training health body mind brain
  heart skin eye hand foot feet back sleep dream morning afternoon evening night day week month year time hour minute
  season summer winter spring autumn fall weather rain snow wind sun light dark heat cold air water fire ice energy
  power electricity gas oil fuel food meal breakfast lunch dinner snack coffee tea milk sugar salt bread flour dough
  butter egg cheese meat fish chicken fruit vegetable rice pasta pizza cake wine beer drink oven stove pan pot bowl
  knife city town village country state world earth nature road street traffic car bike bus train plane trip travel
  walk ride drive phone screen computer laptop internet app software tool device machine battery pump engine network
  website email message doctor nurse patient hospital medicine drug pill treatment symptom pain stress anxiety mood
  habit routine schedule goal choice option decision test trial new old good bad best better worse worst big bigger
  biggest small smaller little large long short high higher low lower hot warm cool early late full free easy hard
  simple real true false right wrong main major minor public private local national general special common normal
  whole different similar same important possible likely sure safe healthy cheap expensive quick fast slow strong
  weak fresh dry wet white black red green blue brown bright clear open close ready young extra total average daily
  weekly monthly yearly annual current recent modern traditional natural organic raw wild basic key top bottom front
  middle inner outer single double make take get use try keep help stop go come see look find know think want need
  feel run buy sell save spend cook bake eat cut add mix set put read write play move live build fix check switch
  turn leave call ask wait stay learn teach watch listen talk speak grow plant clean wash store hold carry bring send
  brew roast boil fry grill freeze invest borrow lend rebalance retire cycle commute lift stretch rise proof fold
  shape score affect cause improve reduce increase matter differ compare prefer avoid allow steam temperature weight
  speed distance height depth length width volume space sound noise smell taste color colour style quality quantity
  safety comfort support service care cover view list map model pattern design material metal wood glass plastic
  stone sand soil grass leaf flower seed tree forest river lake sea ocean beach hill mountain island bridge tower
  park farm shop mall restaurant cafe bar hotel church library museum hobby holiday vacation weekend party wedding
  birthday gift letter law court police army war peace government election vote policy history future past present
  culture language english supper teen adult senior elderly beginner expert owner buyer seller renters tenant`).map(Text.stem),
);

/** Endings of derived English words ("Brewing", "Mostly", "Hydration"): no evidence of a name either. */
const derived = /(?:ings?|ly|ness|ments?|t?ions?|ities|ity|isms?|ful|less|[ai]ble|ous)$/;

/** Titles before a name: dropped from it, and evidence that the next capitalized word is one ("Ms. Lindqvist"). */
const honorifics = new Set(words('mr mrs ms mx dr prof sir dame rev fr st'));

/** Abbreviations whose period ends no sentence, and which are no names themselves ("Ep. 41", "vs. index funds"). */
const abbreviations = new Set(words('ep eps no nos vol vols fig figs ch chap pp pg sec art approx ca cf vs etc jr sr inc ltd co corp dept est min max mt ft'));

/** Words that join the parts of a name: "Bank of England", "Ludwig van Beethoven", "Ursula von der Leyen". */
const connectors = new Set(words('of the de del della der den van von la le da di du dos das'));

/**
 * The question's words, numbers and punctuation, in order. Numbers take a unit written against them ("400mg", "27°C",
 * "10%"); words keep their inner apostrophes, hyphens and digits ("O'Brien", "Ferreira-Holm", "COVID-19", "ABC1D").
 * Every repetition starts with a character the one before cannot take, so matching is linear.
 */
const tokenPattern =
  /(?<number>\p{Nd}+(?:[.,:/‐-]\p{Nd}+)*)(?<unit>[%‰]|°?\p{L}[\p{L}\p{M}\p{N}]*)?|[\p{L}\p{M}\p{N}]+(?:(?:['’‐&-]|(?<=\p{N})[.,:/](?=\p{N}))[\p{L}\p{M}\p{N}]+)*|\n|[^\s\p{L}\p{M}\p{N}]/gu;

/** Marks after which a new clause starts: sentence ends, clause punctuation, quotes, brackets, dashes, bullets. */
const clauseMarks = new Set([...'.?!;:,()[]{}"“”„«»‘’\'—–-•*·…¿¡#>|\n']);

const quotePattern = /["“”„«»]([^"“”„«»]{2,80})["“”„«»]/g;

/** A word capitalized as names are: "Mara", "ABC1D", "GPT-4", and inner capitals ("iPhone"); not uncased scripts. */
const nameLike = (word: string) => /^[\p{Lu}\p{Lt}]|^\p{Ll}+\p{Lu}/u.test(word) && !/\p{Lo}/u.test(word);

/** A name's possessive is not part of it: "Mara's" is Mara. */
const stripPossessive = (word: string) => (nameLike(word) ? word.replace(/['’]s$/u, '') : word);

/** An identifier carries its own evidence of being a name: digits or inner capitals ("B12", "iPhone", "McKenna"). */
const identifier = (word: string) => /\p{N}|.\p{Lu}\p{Ll}|\p{Ll}\p{Lu}/u.test(word) && !/^\p{Lu}+s?$/u.test(word);

/** True when a word, capitalized where clauses start, is as likely an ordinary word as a name. */
function ordinary(word: string): boolean {
  if (identifier(word)) return false;
  // Only English is known here: a capitalized word of another script there is no evidence either way.
  if (/[^\p{Script=Latin}\p{M}'’‐-]/u.test(word)) return true;
  return Text.tokens(word).every(
    (t) => t.length < 2 || Text.stopwords.has(t) || askWords.has(t) || leadWords.has(t) || connectors.has(t) || derived.test(t) || commonStems.has(Text.stem(t)),
  );
}

const anchorOf = (text: string, kind: Anchor['kind']): Anchor | undefined => {
  const tokens = Text.tokens(text);
  const kept = kind === 'phrase' || tokens.length === 1 ? tokens : tokens.filter((t) => !Text.stopwords.has(t));
  const stems = kept.map(Text.stem);
  return stems.length > 0 ? { text, kind, stems } : undefined;
};

/** Title case ("How Does Caffeine Affect Sleep?") capitalizes every word: then capitals say nothing anywhere. */
function titleCased(tokens: RegExpMatchArray[]): boolean {
  const content = tokens.map((t) => t[0]).filter((w) => /^\p{L}{2}/u.test(w) && !Text.stopwords.has(w.toLowerCase()) && !connectors.has(w.toLowerCase()));
  return content.length >= 3 && content.every((w) => /^\p{Lu}/u.test(w));
}

/**
 * A run of capitalized words as a name. Where capitals are weak evidence (a clause start, title case) ordinary words
 * are trimmed from both ends ("Home brewing" is no name, "Also Owen" is "Owen"), and a single word left is a name only
 * with evidence of its own (a possessive, a title before it, digits or inner capitals): "Naps, good or bad?" and
 * "Rye bread, how long?" ask nothing of a name. A lone acronym is a key term, not an anchor, since content often
 * spells it out ("HELOC", "a home equity line"); a lone letter ("250 °C") is none either.
 */
function nameOf(run: string[], weak: boolean, evidence: boolean): string | undefined {
  let first = 0;
  let last = run.length - 1;
  if (weak) {
    while (first <= last && ordinary(run[first]!)) first++;
    while (last >= first && ordinary(run[last]!)) last--;
  }
  while (first <= last && connectors.has(run[first]!.toLowerCase())) first++;
  const name = run.slice(first, last + 1);
  if (name.length === 0) return undefined;
  if (name.length === 1) {
    const word = name[0]!;
    if (/^[\p{Lu}&]{2,}s?$/u.test(word) || /^\p{L}$/u.test(word)) return undefined;
    if (weak && !evidence && !identifier(word)) return undefined;
  }
  return name.join(' ');
}

/** The quoted phrases of a question, and the question with each quote left as a clause mark. */
function quoted(question: string): { phrases: Anchor[]; rest: string } {
  const phrases: Anchor[] = [];
  let rest = '';
  let from = 0;
  for (const m of question.matchAll(quotePattern)) {
    const phrase = anchorOf(m[1]!.trim(), 'phrase');
    if (phrase) phrases.push(phrase);
    rest += `${question.slice(from, m.index)} " `;
    from = m.index + m[0].length;
  }
  return { phrases, rest: rest + question.slice(from) };
}

/** The names and numbers of a text, in one pass over its tokens. */
function scan(text: string): { names: Anchor[]; numbers: Anchor[] } {
  const names: Anchor[] = [];
  const numbers: Anchor[] = [];
  const tokens = [...text.matchAll(tokenPattern)];
  const weakCapitals = titleCased(tokens);
  let clauseStart = true;
  let lineStart = true;
  let run: string[] = [];
  let runWeak = false;
  let runEvidence = false;
  let titled = false;
  let skipPeriod = -1;
  let connecting: string[] = [];
  const endRun = () => {
    const name = run.length > 0 ? nameOf(run, runWeak, runEvidence) : undefined;
    const anchor = name === undefined ? undefined : anchorOf(name, 'name');
    if (anchor) names.push(anchor);
    run = [];
    runEvidence = false;
    connecting = [];
  };

  tokens.forEach((t, i) => {
    const token = t[0];
    const atLineStart = lineStart;
    lineStart = token === '\n';
    const number = t.groups!.number;
    if (number !== undefined) {
      endRun();
      const next = tokens[i + 1];
      // "1." or "2)" opening a line numbers a list; it asks for nothing.
      const listMarker = atLineStart && number === token && token.length <= 2 && next?.index === t.index! + token.length && /^[.)]$/.test(next[0]);
      const anchor = listMarker ? undefined : anchorOf(number, 'number');
      if (anchor) numbers.push({ ...anchor, text: token });
      clauseStart = false;
      return;
    }
    if (!/^[\p{L}\p{M}\p{N}]/u.test(token)) {
      // The period of "Ms." or "Ep." ends no sentence.
      if (i === skipPeriod) return;
      endRun();
      titled = false;
      if (clauseMarks.has(token)) clauseStart = true;
      return;
    }
    const bare = stripPossessive(token);
    const lower = bare.toLowerCase().replace(/’/g, "'");
    const next = tokens[i + 1];
    const period = next?.[0] === '.' && next.index === t.index! + token.length;
    if ((honorifics.has(lower) || abbreviations.has(lower)) && (period || honorifics.has(lower))) {
      endRun();
      if (period) skipPeriod = i + 1;
      titled = honorifics.has(lower);
      return;
    }
    if (run.length > 0 && connectors.has(lower) && connecting.length < 3) {
      connecting.push(bare);
      return;
    }
    const asking = askWords.has(lower);
    if (nameLike(bare) && !asking && !Text.stopwords.has(lower) && !(clauseStart && leadWords.has(lower))) {
      // A name has at most eight words: a longer run is several names, and the work stays bounded.
      if (run.length >= 8) endRun();
      if (run.length === 0) {
        runWeak = (clauseStart || weakCapitals) && !titled;
        runEvidence = titled;
      }
      titled = false;
      run.push(...connecting, bare);
      connecting = [];
      // A possessive closes a name: "Owen's Rule" is Owen's.
      if (bare !== token) {
        runEvidence = true;
        endRun();
      }
      clauseStart = false;
      return;
    }
    endRun();
    titled = false;
    // After a word that asks, capitals are deliberate; after "So", "And" or "The" the clause has not really begun.
    clauseStart = clauseStart && !asking && (leadWords.has(lower) || Text.stopwords.has(lower));
  });
  endRun();
  return { names, numbers };
}

/**
 * Finds the anchors of a question: quoted phrases; names (runs of capitalized words, joined by connectors such as
 * "of" or "van", whose capitals are not merely those of a clause start); and numbers (without their units, so
 * "400mg" finds "400 mg" as well). Entities are the names. Each anchor is one group in the diagnostics' missing-anchor
 * lists; there are at most 20, phrases first, then names, then numbers.
 */
export function find(question: string): { anchors: Anchor[]; entities: Anchor[] } {
  const { phrases, rest } = quoted(question);
  const { names, numbers } = scan(rest);
  const anchors: Anchor[] = [];
  const seen = new Set<string>();
  for (const a of [...phrases, ...names, ...numbers]) {
    const key = a.stems.join(' ');
    if (anchors.length >= 20 || seen.has(key)) continue;
    seen.add(key);
    anchors.push(a);
  }
  return { anchors, entities: anchors.filter((a) => a.kind === 'name') };
}

const glued = new WeakMap<string[], Set<string>>();

/** Numbers written against a unit in a chunk ("400mg" is one token there): the number alone matches them too. */
function gluedNumbers(stems: string[]): Set<string> {
  let numbers = glued.get(stems);
  if (!numbers) {
    numbers = new Set();
    for (const s of stems) {
      const m = /^(\p{Nd}+)\p{L}/u.exec(s);
      if (m) numbers.add(m[1]!);
    }
    glued.set(stems, numbers);
  }
  return numbers;
}

const spelled = new WeakMap<string[], Set<string>>();

/** The numbers a chunk states in any form ("twenty-seven" as well as "27"), by value. */
function statedNumbers(stems: string[]): Set<string> {
  let found = spelled.get(stems);
  if (!found) spelled.set(stems, (found = Numbers.keysOfStems(stems)));
  return found;
}

/** True when an anchor names a profile: a name or phrase whose every stem names it ("Owen", "Owen Halvorsen"). */
export function namesProfile(anchor: Anchor, profileStems: ReadonlySet<string>): boolean {
  return anchor.kind !== 'number' && anchor.stems.every((s) => profileStems.has(s));
}

/**
 * True when a chunk contains the anchor: every stem for names and numbers (a number also where a unit is written
 * against it, or where it is written in words: "27" is in "twenty-seven degrees"), in sequence for phrases. An anchor that names the chunk's own profile is present in all its content.
 */
export function matches(anchor: Anchor, chunk: Chunk): boolean {
  if (chunk.profileStems && namesProfile(anchor, chunk.profileStems)) return true;
  if (anchor.kind === 'name') return anchor.stems.every((s) => chunk.stemSet.has(s));
  if (anchor.kind === 'number') {
    if (anchor.stems.every((s) => chunk.stemSet.has(s) || gluedNumbers(chunk.stems).has(s))) return true;
    const asked = Numbers.keys(anchor.text);
    return asked.size > 0 && [...asked].every((k) => statedNumbers(chunk.stems).has(k));
  }
  outer: for (let i = 0; i + anchor.stems.length <= chunk.stems.length; i++) {
    for (let j = 0; j < anchor.stems.length; j++) if (chunk.stems[i + j] !== anchor.stems[j]) continue outer;
    return true;
  }
  return false;
}
