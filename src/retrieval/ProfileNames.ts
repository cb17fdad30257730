import * as Anchors from './ranking/Anchors.js';
import type { Anchor } from './ranking/Anchors.js';
import * as Features from './ranking/Features.js';
import type { ScopedChannel } from './Scope.js';
import type * as TermModel from './terms/TermModel.js';
import * as Text from './Text.js';

/**
 * The names of the profiles in scope, as a question uses them: a profile's own name is where its content comes from,
 * not a word its chunks must say, and a question naming several experts is asked of each.
 */

/** The question without the given stems; unchanged when it has none of them or nothing else. */
function without(question: Features.Question, stems: ReadonlySet<string>): Features.Question {
  const kept = question.stems.filter((s) => !stems.has(s));
  if (kept.length === question.stems.length || kept.length === 0) return question;
  const idf = new Map(kept.map((s) => [s, question.idf.get(s)!]));
  return { stems: kept, sequence: question.sequence.filter((s) => !stems.has(s)), idf, totalIdf: [...idf.values()].reduce((a, b) => a + b, 0) || 1 };
}

/**
 * How the chunks of one profile are scored. The profile's own name is implied by where a chunk comes from, so the
 * question's anchors that name it ("Does Owen still rebalance?") are left out of the question for a chunk that does
 * not say the name: they count neither for nor against it, and still against other profiles' chunks.
 */
export function view(options: { profile: ScopedChannel['profile']; question: Features.Question; anchors: Anchor[]; experts: ReadonlySet<string>; termModel?: TermModel.TermModel | undefined }) {
  const profileStems: ReadonlySet<string> = stemsOfProfile(options.profile);
  const implied = [...new Set([...options.anchors.filter((a) => Anchors.namesProfile(a, profileStems)).flatMap((a) => a.stems), ...options.experts])];
  const named = without(options.question, new Set(implied));
  const soft = Features.soft(options.termModel, options.question);
  const namedSoft = named === options.question ? soft : Features.soft(options.termModel, named);
  return {
    profileStems,
    /** The question and its soft features for a chunk of this profile. */
    questionFor(c: Features.Candidate) {
      const says = implied.every((s) => c.title.includes(s) || c.text.includes(s));
      return says ? { question: options.question, soft } : { question: named, soft: namedSoft };
    },
  };
}

/** The stems that name a profile: its display name's and its slug's. */
const stemsOfProfile = (profile: ScopedChannel['profile']): ReadonlySet<string> => new Set([...Text.stemsOf(profile.name), ...Text.stemsOf(profile.slug)]);

/**
 * The profiles in scope a question names, when it names several ("What do Mara and Bex each say..."): the question is
 * asked of each of them, their names are where the content comes from (not words to find), and each is heard.
 */
export function namedExperts(channels: Map<string, ScopedChannel>, anchors: Anchor[], given: ReadonlySet<string> = new Set()): { profiles: Set<string>; stems: Set<string> } {
  const profiles = new Map([...channels.values()].map((c) => [c.profile.id, c.profile]));
  const named = [...profiles.values()].filter((p) => given.has(p.id) || anchors.some((a) => Anchors.namesProfile(a, stemsOfProfile(p))));
  if (named.length < 2) return { profiles: new Set(), stems: new Set() };
  const stems = new Set(anchors.filter((a) => named.some((p) => Anchors.namesProfile(a, stemsOfProfile(p)))).flatMap((a) => a.stems));
  return { profiles: new Set(named.map((p) => p.id)), stems };
}

/** How the chunks of one profile are scored (`view`). */
export type View = ReturnType<typeof view>;
