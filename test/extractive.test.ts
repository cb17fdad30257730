import { describe, expect, test } from 'vitest';
import * as Extractive from '../src/answer/Extractive.js';
import * as Rationale from '../src/answer/Rationale.js';
import * as Features from '../src/retrieval/ranking/Features.js';
import type { Evidence } from '../src/retrieval/Evidence.js';
import type { Stats } from '../src/retrieval/index/Stats.js';
import * as Text from '../src/retrieval/Text.js';

/**
 * The offline answer: sentences chosen by the rationale model from the items retrieval ranked best. Evidence is built
 * here directly, so each case shows one choice the synthesizer makes.
 */

const stats = { idf: () => 2 } as unknown as Stats;
const questionOf = (text: string) => Features.question(Text.queryTerms(text), text, stats);

function evidence(itemId: string, score: number, text: string, title = itemId): Evidence {
  const stems = Text.stemsOf(`${title} ${text}`);
  return {
    rowid: 1,
    chunkId: `c_${itemId}`,
    itemId,
    channelId: 'ch',
    ordinal: 0,
    title,
    sourceUrl: null,
    publishedAt: null,
    startSeconds: null,
    endSeconds: null,
    pageStart: null,
    pageEnd: null,
    cues: null,
    chunkText: text,
    text,
    score,
    scoped: { profile: { id: 'p', slug: 'expert', name: 'An Expert', ownerAccountId: null, visibility: 'public' }, channel: { label: 'Notes', kind: 'user_upload', accessLevel: 'public', ratePerMillionTokens: 0 } } as unknown as Evidence['scoped'],
    stems,
    stemSet: new Set(stems),
    profileStems: new Set(),
  };
}

const synthesize = (question: string, list: Evidence[], mode?: 'lookup' | 'summary') =>
  Extractive.create().synthesize({ question, evidence: list, terms: questionOf(question), mode, sentences: Rationale.scorer(questionOf(question), list) });

describe('the extractive answer', () => {
  test('behavior: it quotes the sentence that states the finding, not the background that sets it up', async () => {
    const question = 'Does vitamin D supplementation reduce fracture risk in older adults?';
    const r = await synthesize(question, [
      evidence(
        'trial',
        0.6,
        'Fractures are a major cause of disability in older adults. Whether vitamin D supplementation prevents them remains unclear. We randomly assigned 2,000 adults over 70 to vitamin D or placebo for three years. Vitamin D supplementation did not reduce fracture risk in older adults compared with placebo (hazard ratio 0.98).',
      ),
    ]);
    expect(r.answer).toMatch(/did not reduce fracture risk in older adults compared with placebo/);
    expect(r.answer).not.toMatch(/remains unclear/);
    expect(r.answer).toMatch(/\[1\]$/);
    expect(r.citations).toHaveLength(1);
  });

  test('behavior: a direct question cites a second item only when it states the answer nearly as well as the best', async () => {
    const question = 'How warm should a sourdough starter be kept?';
    const best = evidence('starter', 0.5, 'Keep a new sourdough starter warm, at 24 to 26 °C, until it doubles reliably.');
    const close = evidence('starter-faq', 0.4, 'Keep a sourdough starter warm, at about 25 °C, and it doubles in six hours.');
    const weak = evidence('bread', 0.2, 'A warm kitchen helps a sourdough starter, though any dough proves in time.');
    expect((await synthesize(question, [best, weak])).citations.map((c) => c.itemId)).toEqual(['starter']);
    expect((await synthesize(question, [best, close, weak])).citations.map((c) => c.itemId)).toEqual(['starter', 'starter-faq']);
  });

  test('behavior: an overview takes a sentence from each of several items, in the order the mode returned them', async () => {
    const question = 'What do the notes say about sourdough starter temperature?';
    const list = [0.5, 0.3, 0.2].map((score, i) => evidence(`note-${i}`, score, `Note ${i} says a sourdough starter temperature of ${24 + i} °C works well for feeding.`));
    const r = await synthesize(question, list, 'summary');
    expect(r.citations.map((c) => c.itemId)).toEqual(['note-0', 'note-1', 'note-2']);
  });

  test('behavior: with no evidence the answer says there is none and cites nothing', async () => {
    expect(await synthesize('Anything?', [])).toEqual({ answer: Extractive.nothingFound, citations: [] });
  });
});

describe('answerability', () => {
  test('behavior: evidence that shares the topic but not the claim scores below evidence that states it', () => {
    const question = questionOf('Does caffeine after 2pm shorten deep sleep?');
    const states = evidence('states', 0.3, 'Caffeine taken after 2pm shortened deep sleep by 20 minutes in our sleep lab study.');
    const topic = evidence('topic', 0.3, 'Caffeine is the most widely used stimulant; coffee and tea are its main sources.');
    const answered = Rationale.assess({ ranked: [states, topic], question });
    const unanswered = Rationale.assess({ ranked: [topic], question });
    expect(answered.probability).toBeGreaterThan(unanswered.probability);
    expect(answered.threshold).toBeGreaterThan(0);
  });
});
