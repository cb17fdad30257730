import type { RetrievalDiagnostics } from '../contract/Query.js';
import type { Evidence } from './Evidence.js';
import * as Anchors from './ranking/Anchors.js';
import type { Anchor } from './ranking/Anchors.js';
import type { Retrieval } from './Retriever.js';
import { scoreFloor } from './Retriever.js';

/** A best score at which, with every anchor found and a direct match, confidence is high. */
const highScore = 0.2;
/** Coverage of the question's key terms at which a chunk counts as a direct match. */
const directCoverage = 0.6;

const share = (counts: Map<string, number>, total: number) => (total === 0 ? 0 : Math.max(0, ...counts.values()) / total);
const round = (n: number) => Math.round(n * 1000) / 1000;
const quoted = (a: Anchor) => `“${a.text}”`;

/** How much of the question's key terms (by stem) a chunk contains; its profile's name counts as present. */
function coverage(stems: string[], chunk: Evidence): number {
  return stems.length === 0 ? 0 : stems.filter((s) => chunk.stemSet.has(s) || chunk.profileStems.has(s)).length / stems.length;
}

/**
 * Diagnostics computed from the run, by the rules in docs/retrieval.md: the outcome, the confidence and the reasons.
 * Returns what to return as well: nothing when the outcome means no relevant content.
 */
export function diagnose(
  run: Retrieval,
  context: {
    scopeKind: string;
    scopeNotes: string[];
    channelCount: number;
    /** How likely the evidence answers the question rather than only sharing its topic, and the bar it must reach. */
    answerability?: { probability: number; threshold: number } | undefined;
  },
): { diagnostics: RetrievalDiagnostics; returned: Retrieval['selected'] } {
  const reasons = [...context.scopeNotes];
  const top = run.ranked[0];
  const topScore = top?.score ?? 0;
  const matchedIn = (a: Anchor, pool: Retrieval['ranked']) => pool.some((e) => Anchors.matches(a, e));
  const anchorsInCandidates = run.anchors.filter((a) => matchedIn(a, run.ranked));

  let outcome: RetrievalDiagnostics['outcome'];
  let returned = run.selected;
  if (context.channelCount === 0) {
    outcome = 'no_relevant_content';
    reasons.push('Nothing in this scope can answer: it has no live channel the caller may read.');
  } else if (run.ranked.length === 0) {
    outcome = 'no_relevant_content';
    reasons.push(run.termCount === 0 ? 'The question has no searchable terms.' : 'No indexed chunk in scope shares a term with the question.');
  } else if (run.question.stems.every((stem) => run.ranked.some((e) => e.profileStems.has(stem)))) {
    // "Nadia Nadia Nadia": the words only name the experts, and ask nothing of them.
    outcome = 'no_relevant_content';
    reasons.push('The question only names an expert and asks nothing about them.');
  } else if (run.anchors.length > 0 && anchorsInCandidates.length === 0) {
    outcome = 'anchor_missing';
    reasons.push(`None of the question's anchors (${run.anchors.map(quoted).join(', ')}) appears in the indexed content in scope.`);
  } else if (run.selected.length === 0) {
    const anchorOnly = anchorsInCandidates.length > 0;
    outcome = anchorOnly ? 'anchor_matched_topic_missing' : 'score_floor_not_met';
    reasons.push(
      anchorOnly
        ? `${anchorsInCandidates.map(quoted).join(', ')} ${anchorsInCandidates.length > 1 ? 'appear' : 'appears'} in the content, but nothing there addresses the rest of the question (best score ${round(topScore)} < floor ${scoreFloor}).`
        : `The best evidence scores ${round(topScore)}, below the floor of ${scoreFloor}: related words, not an answer.`,
    );
  } else if (context.answerability && context.answerability.probability < context.answerability.threshold) {
    outcome = 'score_floor_not_met';
    reasons.push(
      `The evidence shares the question's topic but does not state its claim: answerability ${round(context.answerability.probability)} < ${context.answerability.threshold} (best score ${round(topScore)}).`,
    );
  } else {
    outcome = 'relevant_content';
  }
  const noRelevantContent = outcome !== 'relevant_content';
  if (noRelevantContent) returned = [];

  const anchorsMatched = run.anchors.filter((a) => matchedIn(a, returned));
  // With nothing returned, an anchor the candidates do contain (the expert's own name included) is not "missing".
  const missingAnchors = noRelevantContent ? run.anchors.filter((a) => !anchorsInCandidates.includes(a)) : run.anchors.filter((a) => !anchorsMatched.includes(a));
  const missingEntities = run.entities.filter((a) => missingAnchors.includes(a));
  const direct = returned.filter((e) => coverage(run.question.stems, e) >= directCoverage);
  const topicFill = returned.filter((e) => !direct.includes(e) && !run.anchors.some((a) => Anchors.matches(a, e)));
  const items = new Map<string, number>();
  const channels = new Map<string, number>();
  for (const e of returned) {
    items.set(e.itemId, (items.get(e.itemId) ?? 0) + 1);
    channels.set(e.channelId, (channels.get(e.channelId) ?? 0) + 1);
  }
  const topItemShare = round(share(items, returned.length));
  const topChannelShare = round(share(channels, returned.length));

  let confidence: RetrievalDiagnostics['confidence'] = 'low';
  if (!noRelevantContent) {
    const best = returned.reduce((m, e) => Math.max(m, e.score), 0);
    if (best >= highScore && missingAnchors.length === 0 && direct.length >= 1) confidence = 'high';
    else if (best >= scoreFloor && missingAnchors.length <= 1) confidence = 'medium';
    reasons.push(`Top evidence scores ${round(best)} (floor ${scoreFloor}); ${direct.length} of ${returned.length} returned chunk(s) match most key terms directly.`);
    if (run.anchors.length > 0) {
      reasons.push(
        missingAnchors.length === 0
          ? `All ${run.anchors.length} anchor(s) found: ${run.anchors.map(quoted).join(', ')}.`
          : `Not found in the evidence: ${missingAnchors.map(quoted).join(', ')}.`,
      );
    }
    reasons.push(`Evidence comes from ${items.size} item(s) in ${channels.size} channel(s).`);
    if (topItemShare >= 0.8 && returned.length >= 3) reasons.push('Most evidence comes from a single item: broaden the scope or use summary mode for other sources.');
    if (confidence === 'low') reasons.push('Confidence is low: check the chunks (raw mode), narrow the scope, or rephrase.');
    if (run.mode === 'comparison' && run.subjects.length >= 2) reasons.push(`Compared subjects: ${run.subjects.map((s) => `“${s}”`).join(' and ')}.`);
  } else {
    reasons.push('The charge for this query is reversed.');
  }
  if (run.planned) reasons.push(`Query mode ${run.mode} was chosen from the question's wording.`);
  if (run.degraded.includes('vectors')) reasons.push('Ranked by words alone: the embedding service did not answer (or is skipped for a while after failing), so similarity was left out.');

  return {
    returned,
    diagnostics: {
      confidence,
      confidenceReasons: reasons,
      outcome,
      lowConfidence: confidence === 'low',
      returnedChunkCount: returned.length,
      noRelevantContent,
      topItemShare,
      topChannelShare,
      sourceCoverage: { uniqueItems: items.size, uniqueChannels: channels.size, topItemShare, topChannelShare },
      candidateCount: run.candidateCount,
      rerankCount: run.ranked.length,
      uniqueSources: items.size,
      missingAnchorGroups: missingAnchors.map((a) => a.text.split(/\s+/)),
      missingEntityGroups: missingEntities.map((a) => a.text.split(/\s+/)),
      intent: run.mode,
      scopeKind: context.scopeKind,
      contextDepth: run.contextDepth,
      candidateChunkCount: run.candidateCount,
      scoreFloor,
      topScore: round(topScore),
      anchorMatchCount: anchorsMatched.length,
      directMatchCount: direct.length,
      topicFillCount: topicFill.length,
      ...(context.answerability && { answerability: round(context.answerability.probability) }),
      ...(run.degraded.length > 0 && { degraded: run.degraded }),
    },
  };
}
