import { describe, expect, test } from 'vitest';
import * as Numbers from '../src/retrieval/Numbers.js';
import * as Anchors from '../src/retrieval/ranking/Anchors.js';
import * as Text from '../src/retrieval/Text.js';

/** Numbers however a text writes them: a question's "27" is the content's "twenty-seven". */
describe('Numbers', () => {
  test.each([
    ['keep the jar between twenty-four and twenty-six degrees Celsius', [24, 26]],
    ['at twenty-seven degrees', [27]],
    ['at 27 °C', [27]],
    ['one hundred and twenty grams', [120]],
    ['two thousand three hundred kilowatt hours', [2300]],
    ['two and a half hours', [2.5]],
    ['a dozen eggs', [12]],
    ['2,400 kWh and 7.5 kW', [2400, 7.5]],
    ['the one I use, the third week', []],
    ['twenty per day', [20]],
  ])('behavior: %s states %j', (text, values) => {
    expect(Numbers.inText(text).filter((f) => !f.share).map((f) => f.value)).toEqual(values);
  });

  test.each([
    ['a quarter of the heat', 0.25],
    ['three quarters full', 0.75],
    ['about 25% of it', 0.25],
    ['twenty-five percent', 0.25],
    ['25 per cent', 0.25],
    ['half the time', 0.5],
  ])('behavior: %s states the share %d', (text, share) => {
    expect(Numbers.inText(text)).toContainEqual({ value: share, share: true });
  });

  test('behavior: a text states the numbers asked however either writes them', () => {
    expect(Numbers.states('keep it between twenty-four and twenty-six degrees', 'Is 24 degrees warm enough?')).toBe(true);
    expect(Numbers.states('about a quarter of the flour', 'Is it 25% of the flour?')).toBe(true);
    expect(Numbers.states('about a third of the flour', 'Is it 25% of the flour?')).toBe(false);
    expect(Numbers.keysOfStems(Text.stemsOf('at twenty-seven degrees, one hundred and twenty grams'))).toEqual(new Set(['27', '120']));
  });

  test('behavior: a number a question insists on is found where the content writes it in words', () => {
    const { anchors } = Anchors.find('What happens to dough at 27 degrees?');
    const number = anchors.find((a) => a.kind === 'number')!;
    const chunk = (text: string) => {
      const stems = Text.stemsOf(text);
      return { stems, stemSet: new Set(stems) };
    };
    expect(Anchors.matches(number, chunk('At twenty-seven degrees the dough ferments fast.'))).toBe(true);
    expect(Anchors.matches(number, chunk('At 27°C the dough ferments fast.'))).toBe(true);
    expect(Anchors.matches(number, chunk('At twenty-six degrees the dough ferments slowly.'))).toBe(false);
  });
});
