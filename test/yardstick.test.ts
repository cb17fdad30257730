import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Demo from '../src/demo/Demo.js';
import * as Yardstick from '../src/eval/Yardstick.js';

/**
 * The answer yardstick (data/yardstick): judged questions over conversational, multi-format expert content. The set
 * itself is checked (every quote is in its file, every fact in a gold passage), and so is what the offline answerer
 * scores on it, as a floor no change to answers may go below (docs/retrieval.md has the figures).
 */

const questions = Yardstick.loadQuestions();
const directories = [Demo.defaultDirectory, Yardstick.defaultDirectory];
const fileText = (file: string) => {
  const found = directories.map((d) => path.join(d, file)).find((f) => fs.existsSync(f));
  return found === undefined ? undefined : Yardstick.normalize(fs.readFileSync(found, 'utf8'));
};

describe('the yardstick as written', () => {
  test('behavior: at least 150 questions, every kind asked, beyond the demo experts, with questions that have no answer', async () => {
    expect(questions.length).toBeGreaterThanOrEqual(150);
    const kinds = new Set(questions.map((q) => q.kind));
    for (const kind of Yardstick.QuestionKind.options) expect(kinds, kind).toContain(kind);
    const manifest = await Demo.readManifest(Yardstick.defaultDirectory);
    const own = new Set(manifest.profiles.map((p) => p.slug));
    expect(own.size).toBeGreaterThanOrEqual(4);
    const aboutOwn = questions.filter((q) => (q.passages ?? []).some((p) => own.has(p.file.split('/')[0]!)));
    expect(aboutOwn.length).toBeGreaterThanOrEqual(100);
    expect(questions.filter((q) => !q.answerable).length).toBeGreaterThanOrEqual(30);
  });

  test.each(questions.filter((q) => q.answerable))('behavior: $id quotes its passages verbatim and states facts found in them', (q) => {
    const texts = q.passages!.map((p) => fileText(p.file));
    q.passages!.forEach((p, i) => {
      expect(texts[i], `${p.file} exists`).toBeDefined();
      expect(texts[i], p.quote).toContain(Yardstick.normalize(p.quote));
    });
    for (const group of q.facts!) expect(group.some((fact) => texts.some((t) => t!.includes(Yardstick.normalize(fact)))), JSON.stringify(group)).toBe(true);
  });

  test('behavior: the scorer reads facts and passages past case, dashes, voice tags and citation markers', () => {
    expect(Yardstick.statesFacts('Start at Seventy-two percent [1].', [['seventy two percent']])).toBe(true);
    expect(Yardstick.statesFacts('Start at 68 percent [1].', [['72 percent', '72%']])).toBe(false);
    // A fact denied is not stated, and an answer that states and denies it contradicts itself.
    expect(Yardstick.statesFacts("Don't switch it off overnight [1].", [['switch it off']])).toBe(false);
    expect(Yardstick.statesFacts('Never stir it in anger [1].', [['stir it']])).toBe(false);
    // A quantity after a negation is a bound, and stated: "never more than six weeks".
    expect(Yardstick.statesFacts('We never hold more than six weeks of stock [1].', [['six weeks']])).toBe(true);
    expect(Yardstick.statesFacts('Switch it off at night [1]. Actually, do not switch it off at all [2].', [['switch it off']])).toBe(false);
    expect(Yardstick.statesFacts('Switch it off at night, not in the day [1].', [['switch it off']])).toBe(true);
    expect(Yardstick.statesFacts("It's not hard: switch it off at night [1].", [['switch it off']])).toBe(true);
    expect(Yardstick.holds('<v Mara>I retard mine at four degrees</v> for twelve hours.', 'I retard mine at four degrees for twelve hours.')).toBe(true);
    // A quote a chunk boundary cuts still counts for the chunk that holds half of it.
    expect(Yardstick.holds('...and so on. Seventy-five minus sixty-three is twelve.', 'Seventy-five minus sixty-three is twelve. Use water at twelve degrees please.')).toBe(true);
  });
});

describe('the offline answerer on the yardstick', () => {
  let store: Yardstick.YardstickStore;
  let result: Yardstick.YardstickResult;

  beforeAll(async () => {
    store = await Yardstick.buildStore();
    result = await Yardstick.evaluate(store, questions);
  }, 120_000);

  afterAll(() => store?.close());

  test('behavior: answers stay at or above the measured floor: the key fact stated with the right passage cited, and unanswerable questions refused before payment', () => {
    const right = result.answerable.right / result.answerable.asked;
    const refused = result.unanswerable.refusedBeforePayment / result.unanswerable.asked;
    expect(right, JSON.stringify({ ...result, outcomes: undefined })).toBeGreaterThanOrEqual(0.44);
    expect(refused).toBeGreaterThanOrEqual(0.5);
  });

  test('behavior: the held-out experts are asked and reported apart', () => {
    const heldOut = questions.filter((q) => q.heldOut);
    expect(new Set(heldOut.map((q) => q.id.split('-')[0]))).toEqual(new Set(['henrik', 'ailsa', 'margit']));
    expect(heldOut.length).toBeGreaterThanOrEqual(60);
    expect(result.outcomes.filter((o) => o.heldOut)).toHaveLength(heldOut.length);
  });

  test('behavior: confidence means something: high is right at least 90% of the time, low rarely', () => {
    const { high, low } = result.confidence;
    if (high.answers > 0) expect(high.right / high.answers).toBeGreaterThanOrEqual(0.9);
    expect(low.right / Math.max(low.answers, 1)).toBeLessThanOrEqual(0.25);
  });

  test('behavior: a question naming two experts is answered, not refused, and a refusal charges nothing', () => {
    const two = result.outcomes.filter((o) => o.kind === 'two_experts');
    expect(two.filter((o) => o.refused).length / two.length).toBeLessThanOrEqual(0.2);
    for (const o of result.outcomes.filter((x) => x.refused)) expect(o.answer).toMatch(/does not answer this question/);
  });
});
