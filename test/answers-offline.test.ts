import { describe, expect, test } from 'vitest';
import * as Asked from '../src/answer/Asked.js';
import * as Extractive from '../src/answer/Extractive.js';
import * as Meaning from '../src/answer/Meaning.js';
import * as Measures from '../src/answer/Measures.js';
import * as Log from '../src/log/Logger.js';
import * as Rationale from '../src/answer/Rationale.js';
import * as Features from '../src/retrieval/ranking/Features.js';
import type { Evidence } from '../src/retrieval/Evidence.js';
import type { Stats } from '../src/retrieval/index/Stats.js';
import * as Text from '../src/retrieval/Text.js';

/**
 * The offline answer to questions put to experts' talk and notes: which statement of a transcript, a dated note or a
 * post answers, and what comes with it. Evidence is built here directly; each case is one kind of sentence the
 * answer must get right.
 */

const stats = { idf: () => 2 } as unknown as Stats;
const questionOf = (text: string) => Features.question(Text.queryTerms(text), text, stats);

type Expert = { id: string; slug: string; name: string };
const expert = (id: string, name: string): Expert => ({ id, slug: name.toLowerCase().replace(/\s+/g, '-'), name });
const ruth = expert('p_ruth', 'Ruth Okafor');

type Source = { item: string; text: string; score?: number; on?: string; by?: Expert; title?: string };

function evidence({ item, text, score = 0.5, on, by = ruth, title = item }: Source): Evidence {
  const stems = Text.stemsOf(`${title} ${text}`);
  return {
    rowid: 1,
    chunkId: `c_${item}`,
    itemId: item,
    channelId: `ch_${by.id}`,
    ordinal: 0,
    title,
    sourceUrl: null,
    publishedAt: on === undefined ? null : Date.parse(`${on}T12:00:00Z`),
    startSeconds: null,
    endSeconds: null,
    pageStart: null,
    pageEnd: null,
    cues: null,
    chunkText: text,
    text,
    score,
    scoped: { profile: { ...by, ownerAccountId: null, visibility: 'public' }, channel: { label: 'Podcast', kind: 'user_upload', accessLevel: 'public', ratePerMillionTokens: 0 } } as unknown as Evidence['scoped'],
    stems,
    stemSet: new Set(stems),
    profileStems: new Set([...Text.stemsOf(by.name), ...Text.stemsOf(by.slug)]),
  };
}

/** As a paid query runs it: the preflight's sentence scorer, then the offline synthesizer. */
function synthesize(question: string, sources: Source[], mode?: 'lookup' | 'summary' | 'comparison') {
  const list = sources.map(evidence);
  const terms = questionOf(question);
  const { scorer } = Rationale.assess({ ranked: list, question: terms });
  return Extractive.create().synthesize({ question, evidence: list, terms, mode, sentences: scorer });
}

/** The answer's statements without their citation numbers. */
const said = (answer: string) => answer.replace(/\s*\[\d+\]/g, '');

describe('a question put to the expert in their content', () => {
  test.each([
    {
      form: 'a question ending with "?"',
      question: 'How often should I inspect my hives in early summer?',
      asked: 'Dana: Next one. How often should I inspect my hives in early summer, and is opening them every week too much?',
      reply: 'Ruth: Inspect every seven to ten days until midsummer, because early summer is when the colony starts building swarm cells.',
    },
    {
      form: '"Sam writes in:" with the question on the next line',
      question: 'Should I buy a new queen for a queenless colony or let them raise their own?',
      asked: 'Dana: Sam writes in:\nMy colony has been queenless for three weeks, should I buy a new queen or let them raise their own?',
      reply: 'Ruth: Buy a mated queen if it is past midsummer, because a colony that raises its own that late often ends up with a poorly mated queen.',
    },
    {
      form: '"Several of you asked whether ..."',
      question: 'Do bees need sugar syrup in autumn?',
      asked: 'Dana: Several of you asked whether bees need sugar syrup in autumn even after a good honey year.',
      reply: 'Ruth: Heft the hive first: if it feels heavy as a full crate of bottles at the back, they need no syrup at all this autumn.',
    },
  ])('behavior: $form is never the answer: the reply after it is', async ({ question, asked, reply }) => {
    const r = await synthesize(question, [{ item: 'hive-talk-12', text: `Dana: Welcome back to Hive Talk.\n${asked}\n${reply}`, title: 'Hive Talk, episode 12' }]);
    expect(said(r.answer)).toContain(reply.replace(/^Ruth: /, ''));
    expect(said(r.answer)).not.toContain(asked.split('\n').at(-1)!.replace(/^Dana: /, ''));
  });

  test('behavior: a question relayed on one line ("Sam writes in: ...") without a question mark is never the answer', async () => {
    const question = 'Should I buy a new queen for a queenless colony or let them raise their own?';
    const asked = 'Sam writes in: my colony has been queenless for three weeks and I want to know whether to buy a new queen or let them raise their own.';
    const reply = 'Buy a mated queen if it is past midsummer, because a colony that raises its own that late often ends up with a poorly mated queen.';
    const r = await synthesize(question, [{ item: 'hive-talk-13', text: `Dana: ${asked}\nRuth: ${reply}` }]);
    expect(said(r.answer)).toContain(reply);
    expect(said(r.answer)).not.toContain('I want to know');
  });
});

describe('scene-setting and dates', () => {
  test('behavior: a welcome, an introduction and what the episode is about are never the answer', async () => {
    const tomas = expert('p_tomas', 'Tomas Lindqvist');
    const r = await synthesize('How should I dry a rough-turned green wood bowl without it cracking?', [
      {
        item: 'shavings-3',
        by: tomas,
        title: 'Shavings, episode 3',
        text: [
          'Tomas: Welcome back to Shavings, the show about turning green wood bowls.',
          "Tomas: Today we're talking about drying a rough-turned green wood bowl without cracking it.",
          'Tomas: Put the rough-turned bowl in a paper bag with its own shavings and keep it somewhere cool, turning the bag over every few days.',
        ].join('\n'),
      },
    ]);
    expect(said(r.answer)).toContain('Put the rough-turned bowl in a paper bag');
    expect(r.answer).not.toMatch(/Welcome back|Today we're talking/);
  });

  test('behavior: "I\'m Tomas and this is episode 4" is never the answer, though it names the topic and holds a number', async () => {
    const tomas = expert('p_tomas', 'Tomas Lindqvist');
    const r = await synthesize('How long does a green wood bowl take to dry?', [
      {
        item: 'shavings-4',
        by: tomas,
        text: [
          "Tomas: I'm Tomas and this is episode 4, all about how green wood bowls dry.",
          'Tomas: A rough-turned bowl sits in its paper bag for about eight weeks before I give it the final turning.',
        ].join('\n'),
      },
    ]);
    expect(said(r.answer)).toContain('about eight weeks');
    expect(r.answer).not.toContain('episode 4');
  });

  const shopNote = (stamp: string): Source => ({
    item: 'shop-notes-march',
    by: expert('p_tomas', 'Tomas Lindqvist'),
    title: 'Shop notes',
    text: `${stamp}\nCold shop again. Titebond III gave me about ten minutes of open time at 12 degrees, so I glue panels two boards at a time now.`,
  });
  const glue = 'How much open time does Titebond III give in a cold shop?';

  test.each(['March 3, 2025.', '3 March 2025', 'March 2025', 'Tomas: March 3, 2025.'])('behavior: a dated stamp ("%s") heading a note is never the answer, nor what a short first line leans on', async (stamp) => {
    const r = await synthesize(glue, [shopNote(stamp)]);
    expect(said(r.answer)).toContain('Cold shop again. Titebond III gave me about ten minutes of open time');
    expect(r.answer).not.toMatch(/March|2025/);
  });

  test.each(['Monday 3 March 2025.', '2025-03-03.'])('behavior: a dated stamp written "%s" is never the answer', async (stamp) => {
    const r = await synthesize(glue, [shopNote(stamp)]);
    expect(said(r.answer)).toContain('Cold shop again. Titebond III gave me about ten minutes of open time');
    expect(r.answer).not.toContain('2025');
  });
});

describe('a question that asks for a figure', () => {
  const mei = expert('p_mei', 'Mei Tanaka');
  const question = 'How long should a new aquarium run before the first fish go in?';
  const onTopic = { item: 'tank-basics', by: mei, score: 0.6, text: 'Mei: A new aquarium should run empty before the first fish go in, so that the filter bacteria can settle.' };
  const yearOnly = { item: 'my-first-tank', by: mei, score: 0.6, text: 'Mei: In 2021 I let my new aquarium run only a short while before the first fish could go in, and I regretted it.' };
  const figure = { item: 'listener-mailbag', by: mei, score: 0.35, text: 'Mei: I let a new aquarium run for five or six weeks before any fish, testing the water for ammonia every few days.' };

  // A medium ceiling says the lead statement holds the figure: the on-topic sentence may still come along after it.
  test('behavior: the sentence with the figure answers, over a sentence more on topic that has none', async () => {
    const r = await synthesize(question, [onTopic, figure]);
    expect(said(r.answer)).toContain('five or six weeks');
    expect(r.ceiling?.confidence).toBe('medium');
  });

  test('behavior: a year alone ("in 2021") is not the figure asked for', async () => {
    const r = await synthesize(question, [yearOnly, figure]);
    expect(said(r.answer)).toContain('five or six weeks');
    expect(r.ceiling?.confidence).toBe('medium');
    const alone = await synthesize(question, [yearOnly]);
    expect(alone.ceiling).toMatchObject({ confidence: 'low', reason: expect.stringContaining('a figure') });
  });
});

describe('what completes an answer', () => {
  test('behavior: a sentence that leans on a question put to the expert ("You don\'t need that.") is not quoted on its own', async () => {
    const r = await synthesize('How many frames of stores should a hive keep for winter?', [
      {
        item: 'hive-talk-22',
        text: [
          'Dana: Do I need to buy a second brood box for winter stores?',
          "Ruth: You don't need that.",
          'Ruth: A strong colony wants about eight frames of capped stores going into winter, more in a cold spring.',
        ].join('\n'),
      },
    ]);
    expect(said(r.answer)).toContain('about eight frames of capped stores');
    expect(said(r.answer)).not.toMatch(/^Ruth: You don't need that\./);
  });

  test('behavior: a short answer ("Mine is 600 grams.") comes with the sentence it completes', async () => {
    const r = await synthesize('How much sugar goes into a litre of spring syrup?', [
      {
        item: 'hive-talk-20',
        text: [
          'Dana: On to feeding.',
          'Ruth: For spring syrup, dissolve the sugar in a litre of warm water and go thinner than the autumn mix, since it should look like nectar. Mine is 600 grams.',
          'Dana: And in autumn?',
        ].join('\n'),
      },
    ]);
    expect(said(r.answer)).toContain('dissolve the sugar in a litre of warm water and go thinner than the autumn mix, since it should look like nectar. Mine is 600 grams.');
  });

  const joints: Source = {
    item: 'end-grain-post',
    title: 'Glue-ups that fail',
    text: [
      "Don't rely on glue alone for end grain to end grain joints, because the open pores soak it up and the joint snaps.",
      'Unless you size both faces first with thinned glue, and then only for something as light as a box lid.',
      'That is all there is to it, honestly.',
    ].join(' '),
  };

  test.each([
    ['a question', 'Should I glue end grain to end grain?'],
    ['a claim', 'End grain glue joints snap.'],
  ])('behavior: a rule comes with its exception ("Unless ..."), asked as %s', async (_, question) => {
    const r = await synthesize(question, [joints]);
    expect(said(r.answer)).toContain('the open pores soak it up and the joint snaps. Unless you size both faces first with thinned glue');
  });

  test('behavior: a rule comes with its exception ("The exception: ...")', async () => {
    const r = await synthesize('Turn on subtitles in the language you are learning.', [
      {
        item: 'subtitles-post',
        title: 'Subtitles',
        text: [
          'Turn on subtitles in the language you are learning, never in your own language, or your eyes will do all the listening for you.',
          'The exception: in your first month, subtitles in your own language keep you watching long enough to build the habit.',
          'After that month, switch them off for good.',
        ].join(' '),
      },
    ]);
    expect(said(r.answer)).toContain('all the listening for you. The exception: in your first month');
  });
});

describe('a question about the present, and one about what changed', () => {
  const ilse = expert('p_ilse', 'Ilse Brandt');
  const before: Source = { item: 'coaching-notes-2022', by: ilse, score: 0.55, on: '2022-03-10', text: 'Ilse: I used to start every beginner on the London System opening, because they can play the same setup against anything Black does.' };
  const now: Source = { item: 'coaching-notes-2024', by: ilse, score: 0.45, on: '2024-09-18', text: 'Ilse: These days it is the Italian Game for beginners, because its open positions teach them to spot tactics early.' };

  test('behavior: "these days" and "now" are answered with the newest view, not what the expert used to do', async () => {
    for (const question of ['Which opening do you start beginners on these days?', 'Which opening does Ilse start beginners on now?']) {
      const r = await synthesize(question, [before, now]);
      expect(said(r.answer)).toContain('These days it is the Italian Game for beginners');
      expect(r.answer).not.toContain('London System');
    }
    // The same evidence, asked without a time: the older statement ranks first and answers.
    expect(said((await synthesize('Which opening do you start beginners on?', [before, now])).answer)).toContain('London System');
  });

  test('behavior: "still" is answered with the statement that says it is the current view, though neither is dated, and so is a question with no time word', async () => {
    const old: Source = { item: 'endgames-a', by: ilse, score: 0.6, text: 'Ilse: For years I told students to study endgames before they study any openings at all.' };
    const current: Source = { item: 'endgames-b', by: ilse, score: 0.4, text: 'Ilse: My current advice to students is to study endgames and openings side by side, an hour of each every week.' };
    const r = await synthesize('Do you still tell students to study endgames before openings?', [old, current]);
    expect(said(r.answer)).toContain('My current advice to students is to study endgames and openings side by side');
    expect(r.answer).not.toContain('For years I told');
    // Asked without a time word, the view the expert says they have left is still not their answer.
    expect(said((await synthesize('Should students study endgames before openings?', [old, current])).answer)).toContain('My current advice to students');
  });

  test('behavior: what changed is answered with the old view and the new one, each with its month and year', async () => {
    const recommended: Source = { ...now, text: 'Ilse: These days I start beginners on the Italian Game instead, because its open positions teach them to spot tactics early.' };
    const r = await synthesize("How has Ilse's advice on openings for beginners changed?", [before, recommended]);
    expect(r.answer).toMatch(/^March 2022: .*London System.*September 2024: .*Italian Game/);
    expect(r.citations.map((c) => c.itemId)).toEqual(['coaching-notes-2022', 'coaching-notes-2024']);
  });

  test('behavior: a question about the present that names a "water change" is answered with the newest view alone', async () => {
    const mei = expert('p_mei', 'Mei Tanaka');
    const r = await synthesize('What is your current water change schedule?', [
      { item: 'mei-2022', by: mei, score: 0.6, on: '2022-05-04', text: 'Mei: I used to do a 50 percent water change every week on my planted tanks.' },
      { item: 'mei-2024', by: mei, score: 0.4, on: '2024-11-20', text: 'Mei: These days I do a 25 percent water change every second week, because the plants keep the nitrate down.' },
    ]);
    expect(said(r.answer)).toContain('These days I do a 25 percent water change');
    expect(r.answer).not.toContain('I used to');
  });

  test('behavior: what changed keeps the new view when it is stated plainly, without a rule word', async () => {
    const r = await synthesize("How has Ilse's advice on openings for beginners changed?", [before, now]);
    expect(r.answer).toContain('March 2022');
    expect(r.answer).toContain('September 2024');
    expect(said(r.answer)).toContain('These days it is the Italian Game for beginners');
  });
});

describe('a question naming two experts', () => {
  const marta = expert('p_marta', 'Marta Ruiz');
  const kenji = expert('p_kenji', 'Kenji Ota');
  const evidenceOfBoth: Source[] = [
    { item: 'fluent-ep-3', by: marta, score: 0.7, text: 'Marta: Spaced repetition flashcards are the backbone of my vocabulary routine, and I review them every morning before work.' },
    { item: 'marta-blog-flashcards', by: marta, score: 0.6, text: 'Spaced repetition flashcards only stick when each card holds a full sentence from something you actually read.' },
    { item: 'kenji-weekly-9', by: kenji, score: 0.3, text: 'Kenji: I like spaced repetition, but flashcards without audio taught me to read words I could not pronounce.' },
  ];
  const experts = (r: { citations: { profileUrl: string }[] }) => new Set(r.citations.map((c) => c.profileUrl.split('/')[1]));

  test('behavior: each expert the question names is cited, though one ranks far below the other', async () => {
    const r = await synthesize('What do Marta and Kenji say about spaced repetition flashcards?', evidenceOfBoth);
    expect(experts(r)).toEqual(new Set(['marta-ruiz', 'kenji-ota']));
    expect(said(r.answer)).toContain('flashcards without audio taught me to read words I could not pronounce');
    // Named alone, or not at all, the expert who ranks lower is not heard.
    expect(experts(await synthesize('What does Marta say about spaced repetition flashcards?', evidenceOfBoth))).toEqual(new Set(['marta-ruiz']));
    expect(experts(await synthesize('What is said about spaced repetition flashcards?', evidenceOfBoth))).toEqual(new Set(['marta-ruiz']));
  });

  test('behavior: a question about one named expert is answered from that expert, though another states it more plainly', async () => {
    const kenjiFirst: Source[] = [
      { item: 'kenji-weekly-10', by: kenji, score: 0.8, text: 'Kenji: Review spaced repetition flashcards for twenty minutes a day, every day, and never skip the audio.' },
      { item: 'fluent-ep-4', by: marta, score: 0.3, text: 'Marta: I keep my spaced repetition flashcards to ten minutes a day, right after breakfast.' },
    ];
    const r = await synthesize('How long does Marta spend on spaced repetition flashcards each day?', kenjiFirst);
    expect(experts(r)).toEqual(new Set(['marta-ruiz']));
    expect(said(r.answer)).toContain('ten minutes a day');
    // Naming no one, the statement worth most stands, whoever made it.
    const plain = await synthesize('How long should spaced repetition flashcards take each day?', kenjiFirst);
    expect(said(plain.answer)).toContain('twenty minutes a day');
  });
});

describe('the expert declining to answer', () => {
  const question = 'Do I need to pay tax on honey I sell at a farmers market?';
  const records: Source = { item: 'hive-talk-31', score: 0.4, text: 'Ruth: What I will say is that you need to keep a record of every jar of honey you sell at the market, because whoever does your tax will ask for it.' };

  test.each([
    "Ruth: I'm not going to get into whether you need to pay tax on honey you sell at a farmers market, because every country does it differently.",
    'Ruth: Whether you need to pay tax on the honey you sell at a farmers market is outside what I cover here.',
  ])('behavior: "%s" is not given as the answer', async (declining) => {
    const r = await synthesize(question, [{ item: 'hive-talk-30', score: 0.6, text: declining }, records]);
    expect(said(r.answer)).toContain('keep a record of every jar of honey you sell');
    expect(r.citations.map((c) => c.itemId)).toEqual(['hive-talk-31']);
  });

  test('behavior: "that\'s a conversation for your accountant" is not given as the answer', async () => {
    const declining = 'Ruth: Whether you need to pay tax on honey you sell at a farmers market is a conversation for your accountant, not for me.';
    const r = await synthesize(question, [{ item: 'hive-talk-30', score: 0.6, text: declining }, records]);
    expect(r.citations.map((c) => c.itemId)).toEqual(['hive-talk-31']);
  });
});

describe('the confidence an extractive answer supports', () => {
  const tomas = expert('p_tomas', 'Tomas Lindqvist');
  const withFigure: Source = { item: 'finishing-walnut', by: tomas, text: 'Three thin coats of oil, a day apart, is plenty for a walnut tabletop.' };
  const withoutFigure: Source = { item: 'finishing-walnut', by: tomas, text: 'Thin coats of oil on a walnut tabletop beat a single heavy coat, which stays tacky for weeks.' };

  test.each([
    { asked: 'a figure, and the lead states one', question: 'How many coats of oil does a walnut tabletop need?', source: withFigure, mode: undefined, confidence: 'medium' },
    { asked: 'nothing in particular', question: 'What do you put on a walnut tabletop?', source: withoutFigure, mode: undefined, confidence: 'medium' },
    { asked: 'a figure the lead lacks', question: 'How many coats of oil does a walnut tabletop need?', source: withoutFigure, mode: undefined, confidence: 'low' },
    { asked: 'steps', question: 'How do I oil a walnut tabletop?', source: withFigure, mode: undefined, confidence: 'low' },
    { asked: 'an overview', question: 'What do you put on a walnut tabletop?', source: withFigure, mode: 'summary' as const, confidence: 'low' },
  ])('behavior: an answer to a question asking for $asked is at most $confidence confidence', async ({ question, source, mode, confidence }) => {
    const r = await synthesize(question, [source], mode);
    expect(r.ceiling?.confidence).toBe(confidence);
    expect(r.ceiling?.reason).toBeTruthy();
  });

  test('behavior: the ceiling says when the lead statement lacks the figure asked for', async () => {
    const r = await synthesize('How many coats of oil does a walnut tabletop need?', [withoutFigure]);
    expect(r.ceiling?.reason).toContain('a figure');
  });

  test('behavior: a claim to check, not a question, carries no ceiling', async () => {
    const r = await synthesize('Oil finishes protect a walnut tabletop from water rings.', [
      { item: 'finishing-faq', by: tomas, text: 'An oil finish protects a walnut tabletop from water rings only if you wipe spills up within the hour.' },
    ]);
    expect(said(r.answer)).toContain('only if you wipe spills up within the hour');
    expect(r).not.toHaveProperty('ceiling');
  });
});

describe('what a question asks for', () => {
  test.each([
    ['How long should a new aquarium run before adding fish?', 'figure'],
    ['What temperature should a betta tank be kept at?', 'figure'],
    ['How much sugar goes into a litre of spring syrup?', 'figure'],
    ['How often should I inspect my hives?', 'figure'],
    ['How do I sharpen a card scraper?', 'steps'],
    ['Can you walk me through a hive inspection?', 'steps'],
    ['Should beginners learn the Italian Game first?', 'rule'],
    ['What kind of glue do you use for end grain?', 'rule'],
    ['Is a sharpening jig worth it?', 'verdict'],
    ['Are flashcards a waste of time?', 'verdict'],
    ['What do you think about spaced repetition?', 'any'],
    ['Why do bees beard on the front of the hive?', 'any'],
  ] as const)('behavior: "%s" wants %s', (question, wants) => {
    expect(Asked.read(question)).toMatchObject({ wants, interrogative: true });
  });

  test.each([
    ['Which opening do you recommend to beginners these days?', true, false],
    ['Do you still feed your bees in spring?', true, false],
    ['What glue do you use now?', true, false],
    ['What is your current feeding routine for a betta?', true, false],
    ['How has your advice on openings changed?', false, true],
    ['Did you change your mind about water changes?', false, true],
    ['What did you used to recommend for a first hive?', false, true],
    ['Has your view on flashcards evolved over the years?', false, true],
    ['What do you recommend for a first hive?', false, false],
  ] as const)('behavior: "%s" is about the present: %s; asks what changed: %s', (question, present, change) => {
    expect(Asked.read(question)).toMatchObject({ present, change, interrogative: true });
  });

  test.each([
    'Spaced repetition beats rereading for vocabulary.',
    'Bees still need sugar syrup now that the autumn is wet.',
    'Beekeepers have changed their advice on feeding over the years.',
    'Green wood bowls take about eight weeks to dry.',
  ])('behavior: a claim ("%s") asks for nothing: no kind of fact, no time, no change', (claim) => {
    expect(Asked.read(claim)).toEqual({ wants: 'any', present: false, change: false, interrogative: false });
  });
});

describe('a figure of the measure asked for', () => {
  test('behavior: "how warm" is answered by the statement giving degrees, in a source about the subject, though it shares none of the question\'s words', async () => {
    const r = await synthesize('How warm should a sourdough starter be?', [
      {
        item: 'levain-video',
        title: 'Building a sourdough starter from scratch',
        score: 0.6,
        text: [
          'Today we are building a sourdough starter from scratch, and it takes about a week.',
          'Day one: fifty grams of wholemeal rye and fifty grams of water in a clean jar.',
          'Now, the most important variable in this whole process is the room, more than the flour.',
          'Keep the jar somewhere between twenty-four and twenty-six degrees Celsius.',
          'Below about twenty, everything slows down dramatically.',
        ].join('\n'),
      },
      {
        item: 'discard-post',
        title: 'Why I stopped throwing away discard',
        score: 0.2,
        text: 'The amount of starter discard you produce is proportional to how much sourdough starter you keep. These days my mother starter is just 20 grams living in the fridge, and it stays there for thirty-six hours between feeds.',
      },
    ]);
    expect(said(r.answer)).toContain('Keep the jar somewhere between twenty-four and twenty-six degrees Celsius.');
  });

  test.each([
    ['How warm should a sourdough starter be?', 'temperature', 'Keep it between twenty-four and twenty-six degrees.', 'That is thirty-six hours in the fridge.'],
    ['How long should the dough sit in the fridge?', 'duration', 'Retard it for twelve to sixteen hours.', 'Keep the fridge at four degrees.'],
    ['How often should I feed my starter?', 'frequency', 'Feed it once a week from the fridge.', 'Feed it 20 grams of flour.'],
    ['How much does a loaf cost to make?', 'money', 'The country loaf costs about £1.10 in ingredients.', 'It weighs 900 grams.'],
    ['What percentage hydration should a beginner use?', 'share', 'Start at seventy-two percent.', 'Start with 500 grams of flour.'],
  ] as const)('behavior: %s asks for a %s: the statement giving one gives it, the one giving another figure does not', (question, measure, giving, other) => {
    expect(Measures.asked(question)).toBe(measure);
    expect(Measures.gives(giving, measure)).toBe(true);
    expect(Measures.gives(other, measure)).toBe(false);
  });

  test('behavior: a question asking no measure asks for none', () => {
    expect(Measures.asked('What is anchor sleep?')).toBeUndefined();
    expect(Measures.asked('Should I use rye in my starter?')).toBeUndefined();
  });
});

describe('closeness in meaning', () => {
  const sources: Source[] = [
    { item: 'a', text: 'Mara: Press the dough flat and fold the edges in towards the middle, then roll it up tight.', score: 0.5 },
    { item: 'b', text: 'Mara: Folding laundry is my least favourite chore, and I put it off all week.', score: 0.5 },
  ];
  const read = (similarity: Meaning.Similarity | undefined) => {
    const list = sources.map(evidence);
    const question = 'What should I fold first?';
    const terms = questionOf(question);
    const { scorer } = Rationale.assess({ ranked: list, question: terms });
    return Extractive.create().synthesize({ question, evidence: list, terms, sentences: scorer, similarity });
  };

  test('behavior: the statement the encoder reads as closer in meaning is preferred when words do not tell them apart', async () => {
    const closer: Meaning.Similarity = async (_q, texts) => texts.map((t) => (t.includes('dough') ? 0.8 : 0.1));
    expect(said((await read(closer)).answer)).toContain('Press the dough flat');
    const other: Meaning.Similarity = async (_q, texts) => texts.map((t) => (t.includes('laundry') ? 0.8 : 0.1));
    expect(said((await read(other)).answer)).toContain('Folding laundry');
  });

  test('behavior: an encoder that fails leaves the answer to the words, once logged', async () => {
    const lines: string[] = [];
    const failing = Meaning.create({ encoder: { id: 'broken', embed: async () => Promise.reject(new Error('no runtime')) }, logger: Log.create({ level: 'warn', write: (line) => lines.push(line) }) });
    expect(await failing('q', ['a'])).toEqual([]);
    expect(await failing('q', ['a'])).toEqual([]);
    expect(lines.filter((l) => l.includes('sentence encoder failed'))).toHaveLength(1);
    expect((await read(failing)).citations.length).toBeGreaterThan(0);
  });
});
