import crypto from 'node:crypto';
import * as Access from '../auth/Access.js';
import type { Caller } from '../auth/Caller.js';
import type { ItemPage } from '../contract/ItemPage.js';
import { ServiceError } from '../errors/ServiceError.js';
import * as SourceLinks from '../answer/SourceLinks.js';
import type { Store } from '../store/Store.js';
import type * as SignedLinks from './SignedLinks.js';

/** Neighbouring chunks shown on each side of a cited one, for context. */
const context = 1;
/** Chunks shown when the link names none: the item's opening. */
const opening = 5;

/**
 * The page a citation's `profileUrl` names: the item, with the cited chunks and their neighbours. The same access
 * rules as the profile and its channels: a private profile or channel the caller may not read, an unknown item, or an
 * item of another profile is 404, alike; a paused channel's items too. A link signed for passages of this item (`link`
 * is the verdict on its signature) opens those passages and their neighbours, never the rest of the item, unless its
 * holder may read it anyway; an expired one says so in its 404.
 */
export async function load(store: Store, input: { slug: string; itemId: string; chunkIds: string[]; caller: Caller; link?: SignedLinks.Verdict }): Promise<ItemPage> {
  try {
    return await page(store, { ...input, signed: input.link === 'valid' });
  } catch (error) {
    // Only an authentic signature is told apart: a forged, altered or misplaced one is no signature at all.
    if (input.link === 'expired' && error instanceof ServiceError && error.code === 'not_found') {
      throw new ServiceError('not_found', 'this citation link has expired: ask the question again for a fresh link, or open it with a key that may read the item');
    }
    throw error;
  }
}

async function page(store: Store, input: { slug: string; itemId: string; chunkIds: string[]; caller: Caller; signed: boolean }): Promise<ItemPage> {
  // A signed link was issued for this item of this profile: there is no existence left to hide from its holder.
  const profile = input.signed ? await store.profiles.byHandle(input.slug) : await Access.readableProfile(store, input.slug, input.caller);
  if (!profile) throw new ServiceError('not_found', `no profile "${input.slug}"`);
  const item = await store.items.withChunks(input.itemId);
  const channel = item ? await store.channels.find(item.channelId) : undefined;
  const live = channel && channel.profileId === profile.id && channel.status !== 'paused';
  // Whether the caller may read the item without the link: the profile readable to them, and the channel public or
  // theirs to read.
  const readable =
    live &&
    (!input.signed || (await Access.readableProfile(store, input.slug, input.caller).then(() => true, () => false))) &&
    (channel.accessLevel === 'public' || (await Access.isAuthorized(store, profile, input.caller)));
  if (!item || !channel || !live || !(readable || input.signed)) throw new ServiceError('not_found', `no item "${input.itemId.slice(0, 100)}" on profile "${profile.slug}"`);
  const cited = new Set(input.chunkIds.filter((id) => item.chunks.some((c) => c.id === id)));
  const shown = new Set<number>();
  // The item's opening, for a link that names no passage, only to whoever may read the whole item.
  if (cited.size === 0 && readable) item.chunks.slice(0, opening).forEach((c) => shown.add(c.ordinal));
  for (const c of item.chunks) if (cited.has(c.id)) for (let o = c.ordinal - context; o <= c.ordinal + context; o++) shown.add(o);
  // Private content never links to its original.
  const publicSource = channel.accessLevel === 'public' && profile.visibility !== 'private' && item.sourceUrl ? item.sourceUrl : undefined;
  return {
    profile: { slug: profile.slug, name: profile.name },
    item: {
      itemId: item.id,
      title: item.title,
      channel: { id: channel.id, label: channel.label, kind: channel.kind },
      ...(item.publishedAt !== null && { publishedAt: new Date(item.publishedAt).toISOString() }),
      ...(item.author && { author: item.author }),
      ...(publicSource && { sourceUrl: publicSource }),
      chunkCount: item.chunks.length,
    },
    chunks: item.chunks
      .filter((c) => shown.has(c.ordinal))
      .map((c) => {
        const link = SourceLinks.deepLink(publicSource, c);
        return {
          chunkId: c.id,
          ordinal: c.ordinal,
          text: c.text,
          cited: cited.has(c.id),
          ...(c.startSeconds !== null && { startSeconds: c.startSeconds }),
          ...(c.endSeconds !== null && { endSeconds: c.endSeconds }),
          ...(c.pageStart !== null && { pageStart: c.pageStart }),
          ...(c.pageEnd !== null && { pageEnd: c.pageEnd }),
          ...(link && { sourceUrl: link }),
        };
      }),
  };
}

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const clock = (seconds: number): string => {
  const s = Math.floor(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};

const style = `
body { font: 17px/1.55 system-ui, sans-serif; max-width: 44rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
header p { color: #555; margin: .2rem 0; }
.chunk { padding: .6rem .9rem; margin: .8rem 0; border-left: 4px solid #ddd; }
.chunk.cited { background: rgb(255, 243, 176); border-left-color: rgb(230, 170, 0); }
.at { font-size: .85rem; color: #555; }
`;
const script = "document.querySelector('.chunk.cited')?.scrollIntoView({ block: 'center' });";
const sha256 = (text: string) => `'sha256-${crypto.createHash('sha256').update(text).digest('base64')}'`;

/**
 * The headers an HTML page goes out with: its own style and script run (by hash) and nothing else loads, so creator
 * text that got past escaping could still not run or fetch; no framing, no form posts, no MIME sniffing.
 */
export const htmlHeaders: Record<string, string> = {
  'Content-Security-Policy': `default-src 'none'; style-src ${sha256(style)}; script-src ${sha256(script)}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** The page as HTML for a browser: cited chunks highlighted, the first scrolled into view; all text escaped. */
export function html(page: ItemPage): string {
  const { item, profile } = page;
  const meta = [escape(profile.name), escape(item.channel.label), item.publishedAt ? escape(item.publishedAt.slice(0, 10)) : '', item.author ? escape(item.author) : ''].filter(Boolean).join(' · ');
  const chunks = page.chunks
    .map((c) => {
      const at = c.startSeconds !== undefined ? clock(c.startSeconds) : c.pageStart !== undefined ? `p. ${c.pageStart}${c.pageEnd !== undefined && c.pageEnd !== c.pageStart ? `–${c.pageEnd}` : ''}` : '';
      const where = at ? (c.sourceUrl ? `<a class="at" href="${escape(c.sourceUrl)}" rel="noopener noreferrer">${escape(at)}</a>` : `<span class="at">${escape(at)}</span>`) : '';
      return `<section id="${escape(c.chunkId)}" class="chunk${c.cited ? ' cited' : ''}">${where}<p>${escape(c.text)}</p></section>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(item.title)} · ${escape(profile.name)}</title>
<style>${style}</style>
</head>
<body>
<header>
<h1>${escape(item.title)}</h1>
<p>${meta}</p>
${item.sourceUrl ? `<p><a href="${escape(item.sourceUrl)}" rel="noopener noreferrer">Original</a></p>` : ''}
</header>
<main>
${chunks}
</main>
<script>${script}</script>
</body>
</html>
`;
}
