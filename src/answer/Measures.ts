import * as Numbers from '../retrieval/Numbers.js';

/**
 * What a figure question measures, read from its wording ("how warm" asks for a temperature, "how often" for a
 * frequency), and whether a statement gives a figure of that measure: a number with a unit of it nearby ("twenty-four
 * and twenty-six degrees Celsius", "every three days", "£4.20"). Classic answer typing: a statement that gives some
 * other figure ("thirty-six hours" for "how warm") is not the answer, however many of the question's words it shares.
 */
export type Measure = 'temperature' | 'duration' | 'frequency' | 'money' | 'share' | 'weight' | 'length' | 'volume' | 'energy' | 'speed' | 'age';

/** How each measure is asked for. The first that matches wins, so the narrower wordings come first. */
const asking: [Measure, RegExp][] = [
  ['frequency', /\bhow (often|frequently)\b|\bhow many times (a|per|each) (day|week|month|year)\b|\bwhat frequency\b/i],
  ['temperature', /\bhow (warm|hot|cold|cool)\b|\b(what|which) (temperature|temp)\b|\bat what (temperature|temp)\b|\btemperature (should|do|does|to)\b|\bhow many degrees\b/i],
  ['age', /\bhow old\b|\bat what age\b|\bwhat age\b/i],
  ['money', /\bhow much (does|do|did|will|would|should|is|are)\b.{0,40}\b(cost|charge|pay|spend|price|earn|save|bill)\w*|\b(what|which) (price|cost|fee|rate|salary|budget)\b|\bhow much money\b|\bcost of\b|\bhow much to (charge|pay|spend|budget)\b/i],
  ['share', /\b(what|which) (percentage|percent|share|proportion|fraction|hydration)\b|\bwhat per ?cent\b|\bhow much of (the|your|my|their)\b/i],
  ['duration', /\bhow long\b|\bhow many (seconds|minutes|hours|days|weeks|months|years)\b|\bfor how (long|many)\b|\bhow soon\b|\bwhat (length of time|duration)\b/i],
  ['speed', /\bhow fast\b|\bwhat (speed|pace)\b/i],
  ['weight', /\bhow heavy\b|\bhow many (grams|kilos|kilograms|pounds|ounces)\b|\bwhat weight\b|\bhow much (flour|water|salt|sugar|protein|caffeine|compost|seed|starter|levain)\b/i],
  ['length', /\bhow (far|tall|wide|deep|long is the|big|large)\b|\bwhat (size|length|width|height|depth|distance)\b/i],
  ['volume', /\bhow many (litres|liters|millilitres|gallons|cups)\b|\bwhat (volume|capacity)\b/i],
  ['energy', /\bhow many (kwh|kilowatt|watts|kw)\b|\bwhat (wattage|output|capacity) (in|of)\b/i],
];

const unit = (words: string) => new RegExp(`^(?:${words})$`, 'i');

/** The units of each measure, as the word (or symbol) after a number. */
const units: Record<Measure, RegExp> = {
  temperature: unit('°c?|°f|degrees?|deg|celsius|centigrade|fahrenheit|c|f|°'),
  duration: unit('seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|wks?|months?|years?|yrs?|fortnights?|overnight|sessions?'),
  frequency: unit('times?|x|daily|weekly|monthly|yearly|fortnightly|hourly'),
  money: unit('pounds?|pence|p|dollars?|cents?|euros?|eur|usd|gbp|quid|bucks|k'),
  share: unit('%|percent|per|pc|percentage'),
  weight: unit('grams?|g|kilos?|kilograms?|kg|mg|milligrams?|micrograms?|mcg|pounds?|lbs?|lb|ounces?|oz|tonnes?|tons?'),
  length: unit('mm|millimetres?|millimeters?|cm|centimetres?|centimeters?|m|metres?|meters?|km|kilometres?|kilometers?|miles?|inches?|in|feet|foot|ft|yards?|sizes?|cm2|m2'),
  volume: unit('ml|millilitres?|milliliters?|l|litres?|liters?|cups?|tablespoons?|tbsp|teaspoons?|tsp|gallons?|pints?|quarts?|m3'),
  energy: unit('kwh|kw|w|watts?|kilowatts?|kilowatt|mwh|wh|joules?|kj|calories|kcal'),
  speed: unit('mph|kph|km/h|kmh|bpm|per|minutes?|mins?|/km|/mile|pace'),
  age: unit('years?|yrs?|months?|weeks?|year-olds?|olds?'),
};

/** Words that give a frequency without a number ("daily", "once a week", "every other day"). */
const frequencyWords = /\b(once|twice|daily|weekly|monthly|fortnightly|yearly|annually|every (other |single )?(day|night|week|month|year|morning|evening|session)|each (day|week|month))\b/i;
/** Currency symbols written before a number ("£4.20", "$1,200", "€800"). */
const currency = /[£$€¥]\s?\d/;

/** The measure a figure question asks for, if its wording says; undefined for other questions. */
export function asked(question: string): Measure | undefined {
  return asking.find(([, pattern]) => pattern.test(question))?.[0];
}

/** Whether a text gives a figure of `measure`: a number followed within two words by one of its units. */
export function gives(text: string, measure: Measure): boolean {
  if (measure === 'money' && currency.test(text)) return true;
  if (measure === 'frequency' && frequencyWords.test(text)) return true;
  if (measure === 'share' && Numbers.inText(text).some((n) => n.share)) return true;
  const tokens = text.toLowerCase().match(/[a-z]+|\d+(?:[.,]\d+)*|[%°£$€]/g) ?? [];
  // Every place a number starts or ends (digits, or number words), then a unit within the next two tokens.
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    const numeric = /^\d/.test(token) || Numbers.inText(token).length > 0 || (token === 'a' && i + 1 < tokens.length && /^(few|couple|half|quarter|dozen)$/.test(tokens[i + 1]!));
    if (!numeric) continue;
    for (let j = i + 1; j <= i + 3 && j < tokens.length; j++) if (units[measure].test(tokens[j]!)) return true;
  }
  return false;
}
