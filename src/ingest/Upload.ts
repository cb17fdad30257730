import fs from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '../store/Store.js';
import * as Ids from '../store/Ids.js';
import type { Embedder } from '../retrieval/embedders/Embedder.js';
import * as SearchTerms from '../retrieval/index/SearchTerms.js';
import type * as Items from '../store/Items.js';
import { ServiceError } from '../errors/ServiceError.js';
import * as Charset from './Charset.js';
import * as Chunker from './Chunker.js';
import type { Document } from './Document.js';
import { fromPlainText } from './Document.js';
import * as Pdf from './Pdf.js';
import { TranscriptError } from './TranscriptError.js';
import * as Values from './Values.js';
import { type Format, formats } from './Formats.js';
import { lazy } from '../errors/Lazy.js';

export { formats, type Format };

/** The readers of each format, loaded by the first file of that format. */
const readers = {
  markdown: lazy('The Markdown reader (marked)', () => import('./Markdown.js')),
  transcript: lazy('The transcript reader (media-captions)', () => import('./Transcript.js')),
  html: lazy('The HTML reader (linkedom, Readability)', () => import('./Html.js')),
};

/** What an operator may say about an uploaded file; anything left out is derived from the file. */
export type UploadMetadata = {
  externalId?: string | undefined;
  title?: string | undefined;
  sourceUrl?: string | undefined;
  publishedAt?: string | number | undefined;
  author?: string | undefined;
};

export type UploadResult = {
  itemId: string;
  title: string;
  outcome: Items.Outcome;
  chunkCount: number;
  /** How the file was read that its uploader should know (an encoding guessed from the bytes). */
  warnings: string[];
};

/** A parsed file: its text, and what the file itself says about it (an HTML page's byline and date). */
export type Parsed = Document & { author?: string | undefined; publishedAt?: number | undefined };

/** The format of a file from its extension, or a clear error naming the accepted ones. */
export function formatOf(file: string): Format {
  const extension = path.extname(file).toLowerCase() as keyof typeof formats;
  const format = formats[extension];
  if (!format) {
    throw new ServiceError('invalid_request', `cannot upload "${path.basename(file)}": accepted types are ${Object.keys(formats).join(', ')}`);
  }
  return format;
}

/**
 * Parses a file's bytes by format. Text is decoded by its BOM or declared charset (UTF-8 otherwise). HTML is a
 * page, whose main text Readability finds, or a Podcasting 2.0 transcript; JSON is the Podcasting 2.0 transcript
 * format; PDF pages keep their numbers. A file that does not parse as its format is a clear 400.
 */
/**
 * A file's document, as an upload reads it (its format from its extension's kind); throws invalid_request when
 * unreadable. Each format's reader (marked, linkedom and Readability, the caption parser, pdf.js) loads with the first
 * file that needs it (pdf.js, by Pdf itself).
 */
export async function parse(bytes: Buffer, format: Format, name: string, warn: (note: string) => void): Promise<Parsed> {
  const text = () => Charset.decode(bytes, undefined, warn);
  try {
    switch (format) {
      case 'markdown':
        return (await readers.markdown()).fromMarkdown(text());
      case 'text':
        return fromPlainText(text());
      case 'vtt':
      case 'srt':
      case 'json':
        return await (await readers.transcript()).fromTranscript(text(), format);
      case 'html': {
        const html = text();
        const [Transcript, Html] = await Promise.all([readers.transcript(), readers.html()]);
        if (Transcript.isHtmlTranscript(html)) return Transcript.fromHtmlTranscript(html);
        // The page's own byline and publication date (meta tags, JSON-LD), as Readability finds them.
        const page = Html.articleFromPage(html);
        const published = page.publishedTime === undefined ? undefined : Values.dateMs(page.publishedTime);
        return { title: page.title, blocks: page.blocks, author: page.byline?.trim() || undefined, publishedAt: published !== undefined && Number.isFinite(published) ? published : undefined };
      }
      case 'pdf':
        return await Pdf.fromPdf(bytes);
    }
  } catch (error) {
    if (error instanceof TranscriptError || error instanceof Pdf.PdfError) throw new ServiceError('invalid_request', `cannot read "${name}": ${error.message}`);
    throw error;
  }
}

/** A date given as epoch milliseconds or an ISO 8601 string. */
export function parseDate(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = typeof value === 'number' ? value : Values.dateMs(value);
  if (ms === undefined || !Number.isFinite(ms)) throw new ServiceError('invalid_request', `"${value}" is not a date (use ISO 8601, e.g. 2025-03-14)`);
  return ms;
}

function parseUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const url = Values.httpUrl(value);
  if (url === undefined) throw new ServiceError('invalid_request', `"${value}" is not an http(s) URL`);
  return url;
}

const titleFromFile = (file: string): string =>
  path.basename(file, path.extname(file)).replace(/[-_]+/g, ' ').replace(/^\w/, (c) => c.toUpperCase());

/**
 * Ingests one file into a channel: parse, chunk, store. Uploading unchanged content again changes nothing; changed
 * content replaces the item's chunks in one transaction. Everything is validated before the store is touched.
 */
export async function ingest(
  { store }: { store: Store },
  input: { channelId: string; file: string; content?: string | Buffer | undefined; metadata?: UploadMetadata; chunkTargetTokens: number; embedder?: Embedder | undefined },
): Promise<UploadResult> {
  const channel = await store.channels.get(input.channelId);
  const format = formatOf(input.file);
  const meta = input.metadata ?? {};
  const given = parseDate(meta.publishedAt);
  const sourceUrl = parseUrl(meta.sourceUrl);
  const bytes = typeof input.content === 'string' ? Buffer.from(input.content) : (input.content ?? (await fs.readFile(input.file)));
  const warnings: string[] = [];
  const document = await parse(bytes, format, path.basename(input.file), (note) => warnings.push(note));
  const chunks = Chunker.chunk(document, Chunker.sizes(input.chunkTargetTokens));
  if (chunks.length === 0) throw new ServiceError('invalid_request', `"${path.basename(input.file)}" has no text to index`);
  const title = meta.title ?? document.title ?? titleFromFile(input.file);
  // What the operator says wins over what the file says.
  const publishedAt = given ?? document.publishedAt;
  const author = meta.author ?? document.author;
  const externalId = meta.externalId ?? path.basename(input.file);
  const contentHash = Ids.fingerprint(
    // Text formats hash their text (as before PDF support, so stored items stay unchanged); PDF its bytes.
    JSON.stringify({ format, content: format === 'pdf' ? `${Pdf.extraction}:${Ids.fingerprint(bytes)}` : Charset.decode(bytes), title, sourceUrl, publishedAt, author, target: input.chunkTargetTokens }),
  );
  // Embedding happens before the write (a transaction holds no outside call), and only for changed content.
  const unchanged = (await store.items.contentHash(channel.id, externalId)) === contentHash;
  const vectors = input.embedder && !unchanged && (await store.vectors.info()) ? await input.embedder.embed(chunks.map((c) => `${title}\n${c.text}`), 'document') : undefined;
  const stored = await store.items.put(SearchTerms.indexed({
    vectors,
    channelId: channel.id,
    externalId,
    title,
    sourceUrl,
    publishedAt,
    author,
    metadata: { format, file: path.basename(input.file) },
    contentHash,
    chunks,
  }));
  return { ...stored, title, warnings };
}
