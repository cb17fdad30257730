import type { QueryResponse, RawChunk, RawQueryResponse } from '../contract/Query.js';
import type { Evidence } from '../retrieval/Evidence.js';
import * as SignedLinks from './SignedLinks.js';

/** Content a link opens only with authorization: a private channel's, or any channel's of a private profile. */
const isPrivate = (e: Evidence): boolean => e.scoped.channel.accessLevel === 'private' || e.scoped.profile.visibility === 'private';

/**
 * A paid answer whose links to private content open in a browser without the caller's key: each such `profileUrl`
 * (citations, raw chunks, and the chunks of source groups) carries a signature bound to its item; every other link is
 * left exactly as it was. Returns a new response.
 */
export async function sign<R extends QueryResponse | RawQueryResponse>(response: R, options: { evidence: readonly Evidence[]; links: SignedLinks.SignedLinks }): Promise<R> {
  const signatures = new Map<string, { expires: number; sig: string }>();
  for (const e of options.evidence) {
    if (isPrivate(e) && !signatures.has(e.itemId)) signatures.set(e.itemId, await options.links.sign({ slug: e.scoped.profile.slug, itemId: e.itemId }));
  }
  if (signatures.size === 0) return response;
  const signed = <T extends { itemId: string; profileUrl: string }>(link: T): T => {
    const signature = signatures.get(link.itemId);
    return signature ? { ...link, profileUrl: SignedLinks.withSignature(link.profileUrl, signature) } : link;
  };
  if ('mode' in response && response.mode === 'raw') {
    const raw: RawQueryResponse = response;
    return {
      ...raw,
      chunks: raw.chunks.map((c: RawChunk) => signed(c)),
      ...(raw.sourceGroups && { sourceGroups: raw.sourceGroups.map((g) => ({ ...g, chunks: g.chunks.map((c) => signed(c)) })) }),
    } as R;
  }
  const synthesized = response as QueryResponse;
  return { ...synthesized, citations: synthesized.citations.map((c) => signed(c)) } as R;
}
