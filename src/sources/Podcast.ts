import * as Charset from '../ingest/Charset.js';
import type { Block, Document } from '../ingest/Document.js';
import { fromPlainText } from '../ingest/Document.js';
import * as Html from '../ingest/Html.js';
import * as Transcript from '../ingest/Transcript.js';
import * as Ids from '../store/Ids.js';
import { type Connector, type Entry, RetryLater, type SourceItem, type SyncContext, hasRealText, withStandIn } from './Connector.js';
import * as Feed from './Feed.js';
import { type Fetcher, mayPass } from './Fetcher.js';
import { readFeed } from './Rss.js';
import { type Transcriber, TranscriberError } from './Transcriber.js';
import { type Loose, record, records, str } from './Loose.js';
import { httpUrl } from '../ingest/Values.js';


export type TranscriptLink = { url: string; type: string | undefined; language: string | undefined };
export type Chapter = { startSeconds: number; title: string };

/** Publisher transcript formats, best first: speakers and times, then times, then text. */
const preference: (Transcript.TranscriptFormat | 'text')[] = ['json', 'vtt', 'srt', 'html', 'text'];

/** The episode's `<podcast:transcript>` links, best first: the feed's language, then the richest format. */
export function transcriptLinks(raw: Loose, base: string, language: string | undefined): TranscriptLink[] {
  const links = records(record(raw.podcast)?.transcripts)
    .map((t) => ({ url: httpUrl(str(t.url), base), type: str(t.type), language: str(t.language) }))
    .filter((t): t is TranscriptLink => t.url !== undefined);
  const rank = (t: TranscriptLink) => {
    const format = Transcript.formatOf(t.type, t.url) ?? 'text';
    const sameLanguage = !t.language || !language || t.language.toLowerCase().split('-')[0] === language.toLowerCase().split('-')[0];
    return (sameLanguage ? 0 : 10) + preference.indexOf(format);
  };
  return links.sort((a, b) => rank(a) - rank(b));
}

/** Podlove Simple Chapters inline in the feed (`<psc:chapters>`), when the episode has them. */
function inlineChapters(raw: Loose): Chapter[] {
  return records(record(raw.psc)?.chapters)
    .map((c) => ({ startSeconds: Transcript.clockSeconds(String(c.start ?? '')), title: Feed.plain(str(c.title)) }))
    .filter((c): c is Chapter => c.startSeconds !== undefined && c.title !== undefined);
}

/** Podcasting 2.0 JSON chapters (`{"chapters": [{"startTime", "title"}]}`); chapters marked `toc: false` are left out. */
export function parseChapters(json: string): Chapter[] {
  const data = record(JSON.parse(json));
  return records(data?.chapters)
    .filter((c) => c.toc !== false)
    .map((c) => ({ startSeconds: Number(c.startTime), title: Feed.plain(str(c.title)) }))
    .filter((c): c is Chapter => Number.isFinite(c.startSeconds) && c.startSeconds >= 0 && c.title !== undefined)
    .sort((a, b) => a.startSeconds - b.startSeconds);
}

/** Puts each chapter's title before the first cue at or after its start, as a heading no chunk crosses. */
export function withChapters(document: Document, chapters: Chapter[]): Document {
  if (chapters.length === 0) return document;
  const blocks: Block[] = [];
  let next = 0;
  for (const block of document.blocks) {
    if (block.kind === 'cue') {
      let title: string | undefined;
      while (next < chapters.length && chapters[next]!.startSeconds <= block.startSeconds + 0.5) title = chapters[next++]!.title;
      if (title !== undefined) blocks.push({ kind: 'heading', text: title, level: 2, boundary: true });
    }
    blocks.push(block);
  }
  return { ...document, blocks };
}

async function fetchText(fetcher: Fetcher, url: string, accept: string): Promise<{ text: string; type: string | undefined }> {
  const response = await fetcher.get(url, { accept });
  if (response.status !== 200) throw new Error(`unexpected ${response.status}`);
  return { text: Charset.decode(response.body, response.contentType), type: response.contentType };
}

/** An HTML transcript: the Podcasting 2.0 shape (speakers and times), or a page whose main text is the transcript. */
function htmlTranscript(html: string): Document {
  return Transcript.isHtmlTranscript(html) ? Transcript.fromHtmlTranscript(html) : { blocks: Html.articleFromPage(html).blocks };
}

/**
 * The publisher's transcript: the best link that can be fetched and parsed, or undefined when none can. A link that
 * failed for a passing reason (a host that does not resolve or answer, 429, 5xx) makes the episode fail instead, so
 * a later sync tries again and the indexed text is kept meanwhile; a dead link (404) or an unreadable file moves on
 * to the next link.
 */
async function publisherTranscript(fetcher: Fetcher, links: TranscriptLink[]): Promise<{ document: Document; format: string } | undefined> {
  let passing: unknown;
  for (const link of links) {
    try {
      const { text, type } = await fetchText(fetcher, link.url, link.type ?? '*/*');
      const format = Transcript.formatOf(link.type, link.url) ?? Transcript.formatOf(type, link.url);
      const document = format === 'html' ? htmlTranscript(text) : format ? await Transcript.fromTranscript(text, format) : fromPlainText(text);
      if (document.blocks.length > 0) return { document, format: format ?? 'text' };
    } catch (error) {
      if (mayPass(error)) passing ??= error;
    }
  }
  if (passing) throw new RetryLater(`transcript unavailable for now (${passing instanceof Error ? passing.message : String(passing)})`);
  return undefined;
}

export type PodcastOptions = { transcriber?: Transcriber | undefined };

/** The longest wait for an episode's audio: a long episode is tens of megabytes. */
const audioTimeoutMs = 10 * 60_000;

/** Episode text and where it came from: the publisher's transcript, a transcription of the audio, or show notes. */
async function episodeText(
  entry: Feed.FeedEntry,
  context: { fetcher: Fetcher; base: string; language: string | undefined; transcriber: Transcriber | undefined },
): Promise<{ document: Document; text: 'transcript' | 'transcription' | 'show_notes'; transcriptFormat?: string }> {
  const raw = entry.raw;
  const published = await publisherTranscript(context.fetcher, transcriptLinks(raw, context.base, context.language));
  let chapters = inlineChapters(raw);
  const chaptersUrl = httpUrl(str(record(record(raw.podcast)?.chapters)?.url), context.base);
  if (chaptersUrl) {
    try {
      chapters = parseChapters((await fetchText(context.fetcher, chaptersUrl, 'application/json+chapters, application/json')).text);
    } catch (error) {
      // Chapters only label chunks: a dead or unreadable chapters file leaves them out; a passing failure is retried.
      if (mayPass(error)) throw error;
    }
  }
  if (published) return { document: withChapters(published.document, chapters), text: 'transcript', transcriptFormat: published.format };
  const audio = records(raw.enclosures).map((e) => ({ url: httpUrl(str(e.url), context.base), type: str(e.type) })).find((e) => e.url && (!e.type || e.type.startsWith('audio/') || e.type.startsWith('video/')));
  if (context.transcriber && audio?.url) {
    // Audio over the transcriber's limit, or refused for good (4xx), leaves the show notes; a passing failure
    // (network, 429, 5xx, the transcriber down) fails the episode, to be tried again on the next sync.
    try {
      const response = await context.fetcher.get(audio.url, { accept: 'audio/*, video/*', maxBytes: context.transcriber.maxBytes, timeoutMs: audioTimeoutMs });
      if (response.status === 200) {
        const name = decodeURIComponent(new URL(response.url).pathname.split('/').pop() || 'episode.mp3');
        const document = await context.transcriber.transcribe(response.body, { name, type: audio.type ?? response.contentType });
        return { document: withChapters(document, chapters), text: 'transcription' };
      }
    } catch (error) {
      if (passing(error)) throw error;
    }
  }
  return showNotes(entry);
}

/** An episode's show notes, as its text when it has no transcript. */
function showNotes(entry: Feed.FeedEntry): { document: Document; text: 'show_notes' } {
  const notes = entry.contentHtml ?? entry.summaryHtml ?? str(record(entry.raw.itunes)?.summary);
  return { document: notes ? Html.fromHtml(notes) : { blocks: [] }, text: 'show_notes' };
}

/** Failures worth another try: a fetch that may pass, a transcript host down, a transcriber busy. */
const passing = (error: unknown) => mayPass(error) || error instanceof RetryLater || (error instanceof TranscriberError && error.transient);

/**
 * Podcasts: RSS with the iTunes and Podcasting 2.0 namespaces. An episode is indexed from the publisher's transcript
 * (JSON, WebVTT, SRT, HTML or text; speakers and cue times kept), labelled and bounded by its chapters; without one,
 * from a transcription of its audio when a transcriber is configured; otherwise from its show notes, marked as such.
 */
export function connector(options: PodcastOptions = {}): Connector {
  return {
    kind: 'podcast_rss',
    async list(context: SyncContext) {
      const read = await readFeed(context);
      if (!read) return { unchanged: true, state: context.state };
      const { feed, validators, warnings } = read;
      const entries: Entry[] = feed.entries.map((entry) => {
        const podcast = record(entry.raw.podcast);
        return {
          externalId: entry.id,
          version: Ids.fingerprint(
            JSON.stringify([entry.title, entry.link, entry.publishedAt, entry.author, entry.contentHtml, entry.summaryHtml, podcast?.transcripts, podcast?.chapters, record(entry.raw.psc)?.chapters, options.transcriber?.id]),
          ),
          publishedAt: entry.publishedAt,
          load() {
            const item = ({ document, text, transcriptFormat }: { document: Document; text: string; transcriptFormat?: string | undefined }): SourceItem => ({
              title: entry.title ?? entry.link ?? 'Untitled episode',
              sourceUrl: entry.link,
              publishedAt: entry.publishedAt,
              author: entry.author,
              document,
              metadata: { format: feed.format, text, ...(transcriptFormat && { transcriptFormat }) },
            });
            return withStandIn(
              async () => item(await episodeText(entry, { fetcher: context.fetcher, base: feed.link ?? context.source, language: feed.language, transcriber: options.transcriber })),
              () => item(showNotes(entry)),
              { indexed: hasRealText(context, entry.id), passing },
            );
          },
        };
      });
      return { entries, coverage: { kind: 'window' }, state: { validators }, warnings };
    },
  };
}
