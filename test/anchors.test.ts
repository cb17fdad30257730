import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { RawQueryResponse } from '../src/contract/Contract.js';
import * as Anchors from '../src/retrieval/ranking/Anchors.js';
import * as Text from '../src/retrieval/Text.js';
import * as Tools from '../tools/Tools.js';
import * as Environment from './support/Environment.js';

/** Anchors as `kind:text`, in the order `find` returns them: phrases, then names, then numbers. */
const found = (question: string) => Anchors.find(question).anchors.map((a) => `${a.kind}:${a.text}`);

const rows: { about: string; question: string; anchors: string[] }[] = [
  // Connectors are whole words, inside a name only.
  { about: 'a connector is a whole word, not the start of the next word', question: 'Why did Mara Lindqvist describe hydration differently?', anchors: ['name:Mara Lindqvist'] },
  { about: 'a connector-like prefix never joins a name', question: 'What does Note G describe?', anchors: ['name:Note G'] },
  { about: '"la" inside a word is no connector', question: 'Did Owen Halvorsen laminate his spreadsheets?', anchors: ['name:Owen Halvorsen'] },
  { about: '"van" inside a word is no connector', question: 'Does Ines Marchetti vanquish car traffic?', anchors: ['name:Ines Marchetti'] },
  { about: '"of" joins two names', question: 'What does the Bank of England expect for rates?', anchors: ['name:Bank of England'] },
  { about: '"van" joins two names', question: 'Did Ludwig van Beethoven drink coffee?', anchors: ['name:Ludwig van Beethoven'] },
  { about: 'connectors chain', question: 'What did Ursula von der Leyen say about bikes?', anchors: ['name:Ursula von der Leyen'] },
  { about: '"de la" joins two names', question: 'Has Simón de la Cruz baked rye?', anchors: ['name:Simón de la Cruz'] },
  { about: 'a name does not end with a connector', question: 'Is the Bank of inflation worried?', anchors: ['name:Bank'] },
  { about: 'a trailing connector before a number is dropped', question: 'What did the Bank of 2023 say?', anchors: ['name:Bank', 'number:2023'] },
  { about: 'a capitalized connector stays inside a name', question: 'Does Robert De Niro bake bread?', anchors: ['name:Robert De Niro'] },
  // Names at clause starts.
  { about: 'a two-word name starting the question', question: 'Mara Lindqvist says what about rye?', anchors: ['name:Mara Lindqvist'] },
  { about: 'a name after a question word', question: 'Does Owen still rebalance once a year?', anchors: ['name:Owen'] },
  { about: 'a name after a contracted question word', question: "Doesn't Owen rebalance anymore?", anchors: ['name:Owen'] },
  { about: 'a single word at the start needs evidence to be a name (it stays a ranking term)', question: 'Mara, why rice flour?', anchors: [] },
  { about: 'a discourse word before a single word at the start', question: 'Also Owen, what about bonds?', anchors: [] },
  { about: 'a possessive at the start is evidence of a name', question: "Owen's view on bonds?", anchors: ['name:Owen'] },
  { about: 'a title before a name drops and marks it', question: 'What does Ms. Lindqvist say about steam?', anchors: ['name:Lindqvist'] },
  { about: 'a title at the start is evidence too', question: 'Mr. Halvorsen, should I rebalance?', anchors: ['name:Halvorsen'] },
  { about: 'a title before a full name', question: 'Did Dr. Nadia Ferreira-Holm change her mind?', anchors: ['name:Nadia Ferreira-Holm'] },
  { about: "an abbreviation's period ends no sentence", question: 'What was said in Ep. 41 about naps?', anchors: ['number:41'] },
  { about: 'a dotted acronym is no name', question: 'Is the U.S. market overvalued?', anchors: [] },
  { about: 'an ampersand acronym is a key term, not an anchor', question: 'Does the S&P 500 beat bonds?', anchors: ['number:500'] },
  { about: 'a lone letter after a number is a unit', question: 'Should I bake at 250 °C?', anchors: ['number:250'] },
  { about: 'a plural common noun at the start', question: 'Naps, good or bad?', anchors: [] },
  { about: 'a compound noun at the start', question: 'Index funds or ETFs, which are cheaper?', anchors: [] },
  { about: 'a word before a colon', question: 'Roadmaps: how often should they change?', anchors: [] },
  { about: 'a word in brackets at the start', question: '(Protected lanes) are they safer?', anchors: [] },
  { about: 'a name in the second sentence', question: 'I bake at home. What does Mara say about steam?', anchors: ['name:Mara'] },
  { about: 'several names', question: 'Do Mara Lindqvist and Nadia Ferreira-Holm agree about coffee?', anchors: ['name:Mara Lindqvist', 'name:Nadia Ferreira-Holm'] },
  { about: 'a hyphenated name', question: 'What does Nadia Ferreira-Holm say about light', anchors: ['name:Nadia Ferreira-Holm'] },
  { about: 'a possessive', question: "What is Nadia's current advice on coffee?", anchors: ['name:Nadia'] },
  { about: 'a curly possessive', question: 'How has Mara’s advice changed over time?', anchors: ['name:Mara'] },
  { about: 'a possessive closes a name', question: "Is Owen's Rule still sound?", anchors: ['name:Owen', 'name:Rule'] },
  { about: 'an apostrophe inside a name', question: "What does O'Brien say about rye?", anchors: ["name:O'Brien"] },
  { about: 'an article before a single word at the start; a name mid-clause still counts', question: 'The Economist says what about Bitcoin?', anchors: ['name:Bitcoin'] },
  { about: 'a title-cased question keeps only its names', question: 'What Does Mara Lindqvist Say About Hydration?', anchors: ['name:Mara Lindqvist'] },
  { about: 'a title-cased question without names has no anchors', question: 'How Does Home Brewing Affect Sleep?', anchors: [] },
  // Capitalized ordinary words at clause starts.
  { about: 'an ordinary word starting the second sentence', question: 'Does caffeine matter? Home brewing, is it worse?', anchors: [] },
  { about: 'an ordinary word after a colon', question: 'Quick one: Coffee after lunch, yes or no?', anchors: [] },
  { about: 'an ordinary word after a semicolon', question: 'Bread is my thing; Home ovens run hot, right?', anchors: [] },
  { about: 'an ordinary word after a comma', question: 'For sourdough, Water temperature matters how much?', anchors: [] },
  { about: 'an ordinary word after an opening parenthesis', question: 'Is a cold retard worth it (Home ovens especially)?', anchors: [] },
  { about: 'an ordinary word after a quote', question: 'Is “cold retard” overrated? “Morning bakes” are easier.', anchors: ['phrase:cold retard', 'phrase:Morning bakes'] },
  { about: 'an ordinary word in a bullet', question: 'Which is better:\n- Home ovens\n- Steam ovens', anchors: [] },
  { about: 'an ordinary word after a newline', question: 'About starters\nRoom temperature works?', anchors: [] },
  { about: 'a numbered list', question: '1. Home ovens\n2. Steam\nWhat does Mara prefer?', anchors: ['name:Mara'] },
  { about: 'a discourse word keeps the clause start', question: 'So Home brewing is fine?', anchors: [] },
  { about: 'an ordinary word with a derived ending', question: 'Brewing at home, does it matter?', anchors: [] },
  { about: 'an unusual word starting a clause is no name', question: 'Caffeine: how long does it last?', anchors: [] },
  { about: 'a capitalized ordinary word mid-sentence is a name', question: 'Does Mara use White Lily flour?', anchors: ['name:Mara', 'name:White Lily'] },
  // Digits in names.
  { about: 'a gene name stays whole', question: 'What is known about ABC1D?', anchors: ['name:ABC1D'] },
  { about: 'a hyphenated model name stays whole', question: 'Does GPT-4 make mistakes?', anchors: ['name:GPT-4'] },
  { about: 'a disease name with a number', question: 'What did Nadia say about COVID-19 and sleep?', anchors: ['name:Nadia', 'name:COVID-19'] },
  { about: 'a vitamin', question: 'Should I take B12 with melatonin?', anchors: ['name:B12'] },
  { about: 'an inner capital and a model number', question: 'Is the iPhone 15 screen too bright at night?', anchors: ['name:iPhone', 'number:15'] },
  { about: 'an identifier starting a clause is a name', question: 'B12: do I need it?', anchors: ['name:B12'] },
  // Acronyms.
  { about: 'a lone acronym is a key term, not an anchor', question: 'Can my credit card limit or a HELOC serve as my emergency fund?', anchors: [] },
  { about: 'a lone plural acronym', question: 'Are ETFs better than index funds?', anchors: [] },
  { about: 'an acronym inside a name stays', question: 'What did the IRS Commissioner Danny Werfel say?', anchors: ['name:IRS Commissioner Danny Werfel'] },
  // Numbers.
  { about: 'a number with a unit written against it', question: 'Is 400mg of caffeine too much?', anchors: ['number:400mg'] },
  { about: 'a number with a spaced unit', question: 'Is 400 mg of caffeine too much?', anchors: ['number:400'] },
  { about: 'distances and percentages', question: 'Can I run 5km at 10% incline?', anchors: ['number:5km', 'number:10%'] },
  { about: 'a multiplier', question: 'Is a 3x leveraged fund risky?', anchors: ['number:3x'] },
  { about: 'a temperature', question: 'My dough is fermenting at about 27°C. How much should it rise?', anchors: ['number:27°C'] },
  { about: 'a decimal with a unit', question: 'Is 2.5kg of flour enough for a week?', anchors: ['number:2.5kg'] },
  { about: 'a decimal percentage', question: 'Did mortgage rates hit 15.5% in the 1980s?', anchors: ['number:15.5%', 'number:1980s'] },
  { about: 'a ratio', question: 'Under the 5/25 rebalancing rule, when would a 10% holding trigger a rebalance?', anchors: ['number:5/25', 'number:10%'] },
  { about: 'a time', question: 'Is coffee at 7:30am too late for a night shift?', anchors: ['number:7:30am'] },
  { about: 'a month and a year', question: 'What did Owen text followers when markets dropped in March 2023?', anchors: ['name:Owen', 'name:March', 'number:2023'] },
  { about: 'a date', question: 'What changed on 2024-05-16?', anchors: ['number:2024-05-16'] },
  { about: 'thousands separators and currency', question: 'How much does $100,000 grow in 30 years?', anchors: ['number:100,000', 'number:30'] },
  { about: 'an ordinal', question: 'What happened in the 2nd year of the pilot?', anchors: ['number:2nd'] },
  { about: 'a number ending the question without punctuation', question: 'what withdrawal rate works at 55', anchors: ['number:55'] },
  // Quoted phrases.
  { about: 'quoted phrases', question: 'Is "cold retard" the same as "retarding"?', anchors: ['phrase:cold retard', 'phrase:retarding'] },
  { about: 'a quoted name is a phrase, not also a name', question: 'What does “Mara Bakes” post on Sundays?', anchors: ['phrase:Mara Bakes', 'name:Sundays'] },
  // Other languages and scripts.
  { about: 'a name with diacritics', question: 'Was sagt Inès Marchetti über Radwege?', anchors: ['name:Inès Marchetti', 'name:Radwege'] },
  { about: 'a name in Cyrillic', question: 'Что говорит Мара Линдквист о закваске?', anchors: ['name:Мара Линдквист'] },
  { about: 'a capitalized word starting a clause in another script', question: 'Закваска: как её хранить?', anchors: [] },
  { about: 'a script without case has no names', question: 'マラは何と言っていますか?', anchors: [] },
  { about: 'a number with a space in Chinese', question: '每天 400 毫克咖啡因太多吗?', anchors: ['number:400'] },
  // No anchors at all.
  { about: 'a plain question', question: 'How do I laminate butter into dough to make croissants?', anchors: [] },
  { about: 'an all-lowercase question', question: 'how deep does a borehole need to be', anchors: [] },
  { about: 'the pronoun I is no name', question: 'Should I take a big dose of melatonin right at bedtime?', anchors: [] },
];

describe('Anchors.find', () => {
  test.each(rows)('behavior: $about: $question', ({ question, anchors }) => {
    expect(found(question)).toEqual(anchors);
  });

  test('behavior: a unit is not part of a number’s stems, so either spelling in the question finds both in a chunk', () => {
    const glued = Anchors.find('Is 400mg too much?').anchors[0]!;
    const spaced = Anchors.find('Is 400 mg too much?').anchors[0]!;
    expect(glued.stems).toEqual(['400']);
    expect(spaced.stems).toEqual(['400']);
    for (const text of ['Keep it under 400mg a day.', 'Keep it under 400 mg a day.']) {
      const stems = Text.stemsOf(text);
      const chunk = { stems, stemSet: new Set(stems) };
      expect(Anchors.matches(glued, chunk), text).toBe(true);
      expect(Anchors.matches(spaced, chunk), text).toBe(true);
    }
    for (const text of ['Keep it under 40mg a day.', 'Keep it under 4000mg a day.', 'Keep it under 40 mg.']) {
      const stems = Text.stemsOf(text);
      expect(Anchors.matches(glued, { stems, stemSet: new Set(stems) }), text).toBe(false);
    }
  });

  test('behavior: names keep their stopword-free stems; phrases keep every word in order', () => {
    expect(Anchors.find('What does the Bank of England expect?').anchors[0]!.stems).toEqual(['bank', 'england']);
    expect(Anchors.find('Is "the cold retard" worth it?').anchors[0]!.stems).toEqual(['the', 'cold', 'retard']);
    expect(Anchors.find('What does Nadia Ferreira-Holm say?').entities.map((a) => a.text)).toEqual(['Nadia Ferreira-Holm']);
  });

  test('behavior: a question yields at most 20 anchors', () => {
    const names = Array.from({ length: 30 }, (_, i) => `Name${String.fromCharCode(65 + (i % 26))}${i}`);
    expect(Anchors.find(`Did ${names.join(' and ')} agree?`).anchors).toHaveLength(20);
  });

  test('behavior: pathological questions of 10,000 characters are read in one pass', () => {
    const n = 10_000;
    const questions = [
      'Mara '.repeat(n / 5),
      'Bank of the de la van '.repeat(n / 22),
      '1.'.repeat(n / 2),
      '1-'.repeat(n / 2),
      'a-'.repeat(n / 2) + '!',
      "O'".repeat(n / 2),
      '"a'.repeat(n / 2),
      `“${'a'.repeat(n)}`,
      'ABC1D-4 '.repeat(n / 8),
      'A'.repeat(n),
      'Home: '.repeat(n / 6),
      '1.\n'.repeat(n / 3),
      `1${'°'.repeat(n)}`,
      'Мара マラ '.repeat(n / 8),
    ];
    for (const q of questions) expect(Anchors.find(q).anchors.length).toBeLessThanOrEqual(20);
    // A run of capitals is cut into names of at most eight words.
    expect(Anchors.find('Mara '.repeat(n / 5)).anchors[0]!.text.split(' ')).toHaveLength(8);
  });
});

describe('Anchors.matches', () => {
  const chunk = (text: string, profile?: string) => {
    const stems = Text.stemsOf(text);
    return { stems, stemSet: new Set(stems), ...(profile ? { profileStems: new Set(Text.stemsOf(profile)) } : {}) };
  };
  const anchor = (question: string) => Anchors.find(question).anchors[0]!;

  test('behavior: a name naming the chunk’s own profile is present though the text never says it', () => {
    const text = 'I check once a year and rebalance when a band is breached.';
    for (const question of ['Does Owen still rebalance?', 'Does Halvorsen still rebalance?', 'Does Owen Halvorsen still rebalance?', 'Is "Owen Halvorsen" right?']) {
      expect(Anchors.matches(anchor(question), chunk(text, 'Owen Halvorsen owen-halvorsen')), question).toBe(true);
      expect(Anchors.matches(anchor(question), chunk(text, 'Mara Lindqvist mara-lindqvist')), question).toBe(false);
      expect(Anchors.matches(anchor(question), chunk(text)), question).toBe(false);
    }
  });

  test('behavior: a name only partly the profile’s must be in the text', () => {
    const owen = 'Owen Halvorsen owen-halvorsen';
    expect(Anchors.matches(anchor('Does Owen Smith rebalance?'), chunk('I rebalance yearly.', owen))).toBe(false);
    expect(Anchors.matches(anchor('Does Owen Smith rebalance?'), chunk('Owen Smith rebalances yearly.', owen))).toBe(true);
  });

  test('behavior: a phrase is matched in sequence, a name in any order', () => {
    expect(Anchors.matches(anchor('Is "cold retard" worth it?'), chunk('A cold retard overnight.'))).toBe(true);
    expect(Anchors.matches(anchor('Is "cold retard" worth it?'), chunk('Retard it in the cold.'))).toBe(false);
    expect(Anchors.matches(anchor('Did Ludwig van Beethoven drink coffee?'), chunk('Beethoven, Ludwig van: counted 60 beans.'))).toBe(true);
  });
});

describe('anchors in profile_query', () => {
  let environment: Environment.Environment;
  beforeAll(async () => {
    environment = await Environment.create();
  });
  afterAll(async () => {
    await environment.close();
  });

  const ask = async (question: string, slug?: string) =>
    (await Tools.invoke({
      services: environment.services,
      name: 'profile_query',
      args: { question, mode: 'raw', paymentMode: 'credits', ...(slug ? { scope: { kind: 'profile', slug } } : {}) },
      presented: { apiKey: environment.keys.callerKey, origin: 'test' },
      binding: { kind: 'global' },
    })) as RawQueryResponse;

  test('behavior: a name followed by a word starting with a connector is answered, not abstained on', async () => {
    const r = await ask('Why did Mara Lindqvist describe hydration differently?', 'mara-lindqvist');
    const d = r.retrieval.diagnostics!;
    expect(d.outcome, JSON.stringify(d)).toBe('relevant_content');
    expect(d.missingAnchorGroups).toEqual([]);
    expect(r.chunks.slice(0, 3).some((c) => c.text.includes('recommended a dough at 78 to 80 percent hydration'))).toBe(true);
  });

  test.each([
    ['profile scope', 'owen-halvorsen'],
    ['global scope', undefined],
  ])('behavior: naming the expert is no missing anchor and no penalty for their content (%s)', async (_scope, slug) => {
    for (const question of ['Does Owen still rebalance once a year?', 'Does Owen Halvorsen still rebalance once a year?']) {
      const r = await ask(question, slug);
      const d = r.retrieval.diagnostics!;
      expect(d.outcome, question).toBe('relevant_content');
      expect(d.missingEntityGroups, question).toEqual([]);
      expect(r.chunks.slice(0, 5).some((c) => c.text.includes('check once a year')), question).toBe(true);
    }
  });

  test.each([
    ['What does Ms. Lindqvist say about steam?', 'mara-lindqvist'],
    ['How does Mr. Halvorsen handle a market crash?', 'owen-halvorsen'],
  ])('behavior: a title before the expert’s name is answered, not abstained on: %s', async (question, slug) => {
    const d = (await ask(question, slug)).retrieval.diagnostics!;
    expect(d.outcome, JSON.stringify(d)).toBe('relevant_content');
    expect(d.missingAnchorGroups).toEqual([]);
  });

  test('behavior: when nothing is returned, the expert’s own name is not reported missing', async () => {
    const r = await ask('What does Ines Marchetti say about sourdough starters in Copenhagen?', 'ines-marchetti');
    expect(r.retrieval.noRelevantContent).toBe(true);
    expect(r.retrieval.diagnostics!.missingAnchorGroups).not.toContainEqual(['Ines', 'Marchetti']);
  });

  test('behavior: naming the expert does not make an unrelated question answerable', async () => {
    const r = await ask('Does Owen like deep-dish pizza?', 'owen-halvorsen');
    expect(r.retrieval.noRelevantContent).toBe(true);
    expect(r.chunks).toEqual([]);
  });

  test('behavior: a name only partly the expert’s own is still missing', async () => {
    const r = await ask('Does Owen Smith still rebalance once a year?', 'owen-halvorsen');
    expect(r.retrieval.diagnostics).toMatchObject({ outcome: 'anchor_missing', missingEntityGroups: [['Owen', 'Smith']] });
  });
});
