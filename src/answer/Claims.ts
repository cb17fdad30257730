import type { EvidenceClaim } from '../contract/Query.js';
import type { Evidence } from '../retrieval/Evidence.js';
import * as Ids from '../store/Ids.js';
import * as Sentences from './Sentences.js';

/** Words that mark a sentence as asserting something rather than narrating. */
const assertive =
  /\b(is|are|was|were|causes?|leads? to|reduces?|increases?|improves?|lowers?|raises?|prevents?|means|shows?|found|recommends?|should|must|never|always|best|better|worse|more than|less than|at least|at most|rule|key|matters?)\b/i;
const quantitative = /\d|\b(percent|half|twice|double|triple|a third|a quarter|per cent)\b/i;

/**
 * Claim sentences in the evidence: assertive sentences that speak to the question, each pointing at every chunk (and
 * so item and channel) that makes it. Scored by how much of the question they cover and how strong their chunk is.
 */
export function extract(evidence: Evidence[], question: { idf: Map<string, number>; totalIdf: number }, limit = 12): EvidenceClaim[] {
  const byText = new Map<string, { text: string; chunks: Evidence[]; coverage: number; quantitative: boolean; chunkScore: number }>();
  for (const e of evidence) {
    for (const sentence of Sentences.split(e.chunkText)) {
      const bare = sentence.replace(/^[\p{L} .'’-]{2,40}:\s+/u, '');
      if (bare.length < 25 || bare.length > 400 || !assertive.test(bare) || bare.endsWith('?')) continue;
      const coverage = Sentences.coverage(bare, question.idf, question.totalIdf);
      if (coverage < 0.2) continue;
      const key = bare.toLowerCase().replace(/\W+/g, ' ').trim();
      const found = byText.get(key);
      if (found) {
        if (!found.chunks.includes(e)) found.chunks.push(e);
        found.chunkScore = Math.max(found.chunkScore, e.score);
      } else {
        byText.set(key, { text: bare, chunks: [e], coverage, quantitative: quantitative.test(bare), chunkScore: e.score });
      }
    }
  }
  return [...byText.values()]
    .map((c) => {
      const score = Math.min(1, 0.55 * c.coverage + 0.35 * c.chunkScore + (c.quantitative ? 0.1 : 0));
      const matched = Math.round(c.coverage * 100);
      const reason = `Asserts${c.quantitative ? ' a specific figure' : ''} and covers ${matched}% of the question's key terms; made in ${c.chunks.length} chunk(s), best evidence score ${c.chunkScore.toFixed(2)}.`;
      return {
        claimId: Ids.stable('cl', ...c.chunks.map((e) => e.chunkId), c.text),
        text: c.text,
        chunkIds: c.chunks.map((e) => e.chunkId),
        itemIds: [...new Set(c.chunks.map((e) => e.itemId))],
        channelIds: [...new Set(c.chunks.map((e) => e.channelId))],
        score: Math.round(score * 1000) / 1000,
        reason,
      };
    })
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
}
