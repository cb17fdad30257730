import type { QueryResponse, RawChunk, RawQueryResponse } from '../contract/Query.js';
import type { Evidence } from '../retrieval/Evidence.js';
import * as SignedLinks from './SignedLinks.js';

/** Content a link opens only with authorization: a private channel's, or any channel's of a private profile. */
const isPrivate = (e: Evidence): boolean => e.scoped.channel.accessLevel === 'private' || e.scoped.profile.visibility === 'private';

/** The chunk ids a `profileUrl` cites (its `chunks` parameter). */
function citedChunks(profileUrl: string): string[] {
  const query = profileUrl.includes('?') ? profileUrl.slice(profileUrl.indexOf('?') + 1) : '';
  return new URLSearchParams(query).getAll('chunks').flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/**
 * A paid answer whose links to private content open in a browser without the caller's key: each such `profileUrl`
 * (citations, raw chunks, and the chunks of source groups) carries a signature bound to its item and the passages it
 * cites, which is all it opens; every other link is left exactly as it was. Returns a new response.
 */
export async function sign<R extends QueryResponse | RawQueryResponse>(response: R, options: { evidence: readonly Evidence[]; links: SignedLinks.SignedLinks }): Promise<R> {
  const privateItems = new Map<string, string>();
  for (const e of options.evidence) if (isPrivate(e)) privateItems.set(e.itemId, e.scoped.profile.slug);
  if (privateItems.size === 0) return response;
  const links = [
    ...('mode' in response && response.mode === 'raw' ? [...response.chunks, ...(response.sourceGroups ?? []).flatMap((g) => g.chunks)] : (response as QueryResponse).citations),
  ];
  const signatures = new Map<string, { expires: number; sig: string }>();
  for (const link of links) {
    const slug = privateItems.get(link.itemId);
    if (slug !== undefined && !signatures.has(link.profileUrl)) signatures.set(link.profileUrl, await options.links.sign({ slug, itemId: link.itemId, chunkIds: citedChunks(link.profileUrl) }));
  }
  const signed = <T extends { itemId: string; profileUrl: string }>(link: T): T => {
    const signature = signatures.get(link.profileUrl);
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
