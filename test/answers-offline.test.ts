import { describe, expect, test } from 'vitest';
import * as Asked from '../src/answer/Asked.js';
import * as Extractive from '../src/answer/Extractive.js';
import * as Rationale from '../src/answer/Rationale.js';
import * as Features from '../src/retrieval/Features.js';
import type { Evidence } from '../src/retrieval/Retriever.js';
import type { Stats } from '../src/retrieval/Stats.js';
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
      reply: 'Ruth: Every seven to ten days until midsummer, because that is when the colony starts building swarm cells.',
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

  // Roles.isQuestion reads "Sam writes in: ..." on one line as a speaker label "Sam writes in" followed by a statement,
  // so the listener's words are quoted as the answer.
  test.fails('behavior: a question relayed on one line ("Sam writes in: ...") without a question mark is never the answer', async () => {
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

  // Roles.isSetup's introduction patterns ("i'?m [\p{Lu}]", "this is [\p{Lu}][\p{L}]+,") are followed by \b, which
  // needs a word boundary after the name's first letter (or after the comma): only one-letter names ever match.
  test.fails('behavior: "I\'m Tomas and this is episode 4" is never the answer, though it names the topic and holds a number', async () => {
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

  test.each(['March 3, 2025.', '3 March 2025', 'March 2025'])('behavior: a dated stamp ("%s") heading a note is never the answer', async (stamp) => {
    const tomas = expert('p_tomas', 'Tomas Lindqvist');
    const r = await synthesize('How much open time does Titebond III give in a cold workshop?', [
      {
        item: 'shop-notes-march',
        by: tomas,
        title: 'Shop notes',
        text: `${stamp}\nCold workshop again. Titebond III gave me about ten minutes of open time at 12 degrees, so I glue panels two boards at a time now.`,
      },
    ]);
    expect(said(r.answer)).toContain('about ten minutes of open time');
    expect(r.answer).not.toContain(stamp.replace(/\.$/, ''));
  });
});

describe('a question that asks for a figure', () => {
  const mei = expert('p_mei', 'Mei Tanaka');
  const question = 'How long should a new aquarium run before the first fish go in?';
  const onTopic = { item: 'tank-basics', by: mei, score: 0.6, text: 'Mei: A new aquarium should run empty before the first fish go in, so that the filter bacteria can settle.' };
  const yearOnly = { item: 'my-first-tank', by: mei, score: 0.6, text: 'Mei: In 2021 I let my first aquarium run only a short while before the fish went in, and I regretted it.' };
  const figure = { item: 'listener-mailbag', by: mei, score: 0.35, text: 'Mei: I let a new tank run for five or six weeks before any fish, testing the water for ammonia every few days.' };

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

  test.each([
    {
      form: '"The exception: ..."',
      question: 'Should I watch shows with subtitles in my own language?',
      rule: 'Turn on subtitles in the language you are learning, never in your own language, or your eyes will do all the listening for you.',
      exception: 'The exception: in your first month, subtitles in your own language keep you watching long enough to build the habit.',
    },
    {
      form: '"Unless ..."',
      question: 'Should I glue end grain to end grain?',
      rule: "Don't rely on glue alone for end grain to end grain joints, because the open pores soak it up and the joint snaps.",
      exception: 'Unless you size both faces first with thinned glue, and then only for something as light as a box lid.',
    },
  ])('behavior: a rule comes with its exception ($form)', async ({ question, rule, exception }) => {
    const r = await synthesize(question, [{ item: 'post', title: 'Notes', text: `${rule} ${exception} That is all there is to it, honestly.` }]);
    expect(said(r.answer)).toContain(`${rule} ${exception}`);
  });
});
