import type { QueryMode } from '../contract/Query.js';

const rules: [QueryMode, RegExp][] = [
  ['comparison', /\b(compare[sd]?|comparison|comparing|versus|vs\.?|difference between|differences between|differ(s)? from|contrast|(better|worse) than)\b/i],
  ['trend_brief', /\b(trends?|over time|over the (years|months)|changed?|changing|evolv\w*|timeline|history of|since (19|20)\d\d|lately|these days|shift(ed)?|used to)\b/i],
  ['source_inventory', /\b(which|what|list( all| the)?)\s+(episodes?|videos?|posts?|articles?|sources?|notes|messages|talks)\b|\bwhere (does|did|do) \S+ (talk|discuss|mention|cover)/i],
  ['claim_extraction', /\b(claims?|claimed|asserts?|argues?|argued|stance|position on|believes?|what does \S+ (think|believe))\b/i],
  ['summary', /\b(summar(y|ize|ise)|overview|overall|main (points|ideas|themes|takeaways)|key (points|ideas|takeaways)|tell me about|what does \S+ say about|explain)\b/i],
];

/** The retrieval mode a question asks for when the caller names none; lookup unless the wording asks for more. */
export function plan(question: string): QueryMode {
  for (const [mode, pattern] of rules) if (pattern.test(question)) return mode;
  return 'lookup';
}

/** For comparison questions: the subjects being compared, when the wording names them. */
export function subjects(question: string): string[] {
  const text = question.replace(/[?.!]+$/, '');
  const patterns = [
    /\b(?:between|compare|comparing)\s+(.+?)\s+(?:and|with|to|vs\.?|versus)\s+(.+?)(?:\s+(?:for|in|when|on|regarding)\b.*)?$/i,
    /(.+?)\s+(?:vs\.?|versus|or|compared (?:to|with))\s+(.+)/i,
  ];
  for (const p of patterns) {
    const m = p.exec(text);
    if (m) {
      const clean = (s: string) => s.replace(/^(is|are|does|do|should i use|should i|what about|which is better,?)\s+/i, '').replace(/^(the|a|an)\s+/i, '').trim();
      const found = [clean(m[1]!.split(/[,:]\s*/).at(-1)!), clean(m[2]!)].filter((s) => s.length > 1);
      if (found.length === 2) return found;
    }
  }
  return [];
}
