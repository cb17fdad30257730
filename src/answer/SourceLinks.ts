import type { Evidence } from '../retrieval/Evidence.js';

/** Private items never carry a source URL, whoever asks: private channels, and every channel of a private profile. */
export const publicSource = (e: Evidence): string | undefined =>
  e.scoped.channel.accessLevel === 'public' && e.scoped.profile.visibility !== 'private' && e.sourceUrl ? e.sourceUrl : undefined;

/** The moment words at `offset` in a transcript chunk are spoken: the start of the cue they are in, else the chunk's. */
export function momentOf(e: Pick<Evidence, 'cues' | 'startSeconds'>, offset: number | undefined): number | null {
  if (e.startSeconds === null) return null;
  if (offset === undefined || !e.cues) return e.startSeconds;
  let at = e.startSeconds;
  for (const [start, seconds] of e.cues) {
    if (start > offset) break;
    at = seconds;
  }
  return at;
}

/**
 * A chunk's source URL, pointing at the chunk where the host supports it: YouTube videos at the moment
 * (`&t=123s`), PDFs at the page (`#page=3`). Other URLs are returned as they are.
 */
export function deepLink(sourceUrl: string | undefined, at: { startSeconds: number | null; pageStart: number | null }): string | undefined {
  if (sourceUrl === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(sourceUrl);
  } catch {
    return sourceUrl;
  }
  if (at.startSeconds !== null && isYouTubeVideo(url)) {
    url.searchParams.set('t', `${Math.floor(at.startSeconds)}s`);
    return url.href;
  }
  if (at.pageStart !== null && /\.pdf$/i.test(url.pathname) && url.hash === '') {
    url.hash = `page=${at.pageStart}`;
    return url.href;
  }
  return sourceUrl;
}

function isYouTubeVideo(url: URL): boolean {
  const host = url.hostname.replace(/^(www|m)\./, '');
  return (host === 'youtube.com' && url.pathname === '/watch' && url.searchParams.has('v')) || (host === 'youtu.be' && url.pathname.length > 1);
}
