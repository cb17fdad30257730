import * as Text from './Text.js';

/** Something the question insists on: a quoted phrase, a name, or a number. Found only if all its stems are. */
export type Anchor = { text: string; kind: 'phrase' | 'name' | 'number'; stems: string[] };

const questionWords = new Set(['what', 'which', 'who', 'whom', 'whose', 'when', 'where', 'why', 'how', 'does', 'do', 'did', 'is', 'are', 'can', 'should', 'could', 'would', 'will', 'tell', 'give', 'list', 'show', 'summarize', 'summarise', 'compare', 'explain', 'describe', 'i', 'according']);

const anchorOf = (text: string, kind: Anchor['kind']): Anchor | undefined => {
  const tokens = Text.tokens(text);
  const kept = kind === 'phrase' || tokens.length === 1 ? tokens : tokens.filter((t) => !Text.stopwords.has(t));
  const stems = kept.map(Text.stem);
  return stems.length > 0 ? { text, kind, stems } : undefined;
};

/**
 * Finds the anchors of a question: quoted phrases, names (capitalized words that do not merely start the sentence;
 * lone acronyms excluded), and numbers. Entities are the names. Each anchor is one group in the diagnostics' missing-anchor lists.
 */
export function find(question: string): { anchors: Anchor[]; entities: Anchor[] } {
  const anchors: Anchor[] = [];
  const seen = new Set<string>();
  const add = (a: Anchor | undefined) => {
    if (!a || anchors.length >= 20) return;
    const key = a.stems.join(' ');
    if (seen.has(key)) return;
    seen.add(key);
    anchors.push(a);
  };
  let rest = question;
  for (const m of question.matchAll(/["“”]([^"“”]{2,80})["“”]/g)) {
    add(anchorOf(m[1]!.trim(), 'phrase'));
    rest = rest.replace(m[0], ' ');
  }
  // Names: runs of capitalized words; a run at the start of a sentence counts only if it is longer than one word.
  // Runs are bounded (a name has at most eight words) so a pathological question cannot make this slow.
  for (const m of rest.matchAll(/(^|[.?!]\s+|\s)((?:[A-Z][\p{L}'’-]{0,40}|[A-Z]{2,})(?:\s+(?:[A-Z][\p{L}'’-]{0,40}|of|de|van|von|la|del)){0,7})/gu)) {
    const words = m[2]!.split(/\s+/).filter((w) => !questionWords.has(w.toLowerCase()));
    // A lone acronym is often spelled out in the content ("HELOC", "a home equity line"): a key term, not an anchor.
    if (words.length === 1 && /^[A-Z0-9]{2,}s?$/.test(words[0]!)) continue;
    const sentenceStart = m.index === 0 || /[.?!]/.test(m[1]!);
    if (words.length === 0 || (sentenceStart && words.length === m[2]!.split(/\s+/).length && words.length < 2)) continue;
    add(anchorOf(words.join(' '), 'name'));
  }
  for (const m of rest.matchAll(/(?<![\p{L}\p{N}])\d[\d.,/:%]*(?![\p{L}])/gu)) add(anchorOf(m[0].replace(/[.,:]+$/, ''), 'number'));
  return { anchors, entities: anchors.filter((a) => a.kind === 'name') };
}

/** True when a chunk's stems contain the anchor: every stem for names and numbers, in sequence for phrases. */
export function matches(anchor: Anchor, stems: string[], set: Set<string>): boolean {
  if (anchor.kind !== 'phrase') return anchor.stems.every((s) => set.has(s));
  outer: for (let i = 0; i + anchor.stems.length <= stems.length; i++) {
    for (let j = 0; j < anchor.stems.length; j++) if (stems[i + j] !== anchor.stems[j]) continue outer;
    return true;
  }
  return false;
}
