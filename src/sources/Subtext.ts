import { parse as parseCsv } from 'csv-parse/sync';
import * as Charset from '../ingest/Charset.js';
import { fromPlainText } from '../ingest/Document.js';
import * as Ids from '../store/Ids.js';
import type { Connector, Entry, Listing } from './Connector.js';
import * as Feed from './Feed.js';
import type { Loose } from './Loose.js';
import { httpUrl } from '../ingest/Values.js';

/** One broadcast message, as the accepted export shapes give it (see docs/decisions.md). */
export type Message = { id: string; text: string; sentAt: number | undefined; url: string | undefined; title: string | undefined; author: string | undefined };

/** A Subtext export that cannot be read: what was expected, and where it went wrong. */
export class ExportError extends Error {
  override name = 'ExportError';
}

const textKeys = ['text', 'body', 'message', 'content'];
const dateKeys = ['sent_at', 'sentAt', 'created_at', 'createdAt', 'date', 'timestamp'];
const idKeys = ['id', 'message_id', 'messageId'];
const urlKeys = ['url', 'link'];

const pick = (row: Loose, keys: string[]): unknown => keys.map((k) => row[k]).find((v) => v !== undefined && v !== null && v !== '');

/** The latest date accepted: the end of year 9999. */
const maxDate = 253_402_300_799_999;

/** A date as ISO 8601 or epoch seconds or milliseconds (numbers below 10^11 are seconds); undefined if out of range. */
function dateOf(value: unknown): number | undefined {
  let ms: number | undefined;
  if (typeof value === 'number' || (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()))) {
    const n = Number(value);
    ms = n < 1e11 ? n * 1000 : n;
  } else if (typeof value === 'string') ms = Feed.dateOf(value);
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 && ms <= maxDate ? Math.round(ms) : undefined;
}

function toMessage(row: Loose, index: number): Message {
  const body = pick(row, textKeys);
  if (typeof body !== 'string' || body.trim() === '') throw new ExportError(`message ${index + 1} has no text (one of: ${textKeys.join(', ')})`);
  const rawDate = pick(row, dateKeys);
  const sentAt = dateOf(rawDate);
  if (rawDate !== undefined && sentAt === undefined) throw new ExportError(`message ${index + 1} has a date that is not one: ${JSON.stringify(rawDate).slice(0, 60)}`);
  const rawId = pick(row, idKeys);
  if (rawId !== undefined && typeof rawId !== 'string' && typeof rawId !== 'number') throw new ExportError(`message ${index + 1} has an id that is not a string or a number`);
  const id = rawId === undefined ? `sha256:${Ids.fingerprint(`${sentAt ?? ''}\n${body}`).slice(0, 32)}` : String(rawId);
  const url = pick(row, urlKeys);
  const title = pick(row, ['title', 'subject']);
  const author = pick(row, ['author', 'from', 'sender']);
  return {
    id,
    text: body.trim(),
    sentAt,
    url: typeof url === 'string' ? httpUrl(url, undefined) : undefined,
    title: typeof title === 'string' ? title.trim() : undefined,
    author: typeof author === 'string' ? author.trim() : undefined,
  };
}

/**
 * Messages from a Subtext export: JSON (an array of messages, or `{"messages": [...]}`) or CSV with a header row.
 * Each message needs text (`text`, `body`, `message` or `content`); `id`, a date (`sent_at`, `created_at`, `date`,
 * `timestamp`: ISO 8601 or epoch), `url`, `title` and `author` are optional. Messages without an id are known by their
 * date and text.
 */
export function parseExport(text: string, format: 'json' | 'csv'): Message[] {
  let rows: Loose[];
  if (format === 'json') {
    let data: unknown;
    try {
      data = JSON.parse(text.replace(/^\uFEFF/, ''));
    } catch (error) {
      throw new ExportError(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    const list = Array.isArray(data) ? data : (data as Loose | null)?.messages;
    if (!Array.isArray(list)) throw new ExportError('expected an array of messages or {"messages": [...]}');
    rows = list.map((m, i) => {
      if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new ExportError(`message ${i + 1} is not an object`);
      return m as Loose;
    });
  } else {
    try {
      rows = parseCsv(text.replace(/^\uFEFF/, ''), { columns: true, skip_empty_lines: true, trim: true, relax_column_count: true }) as Loose[];
    } catch (error) {
      throw new ExportError(`not CSV: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const messages = rows.map(toMessage);
  const seen = new Set<string>();
  messages.forEach((m, i) => {
    if (seen.has(m.id)) throw new ExportError(`message ${i + 1} repeats the id "${m.id}"`);
    seen.add(m.id);
  });
  return messages;
}

/** A message's title: its own, or its first words. */
const titleOf = (m: Message): string => m.title ?? (m.text.length <= 80 ? m.text : `${m.text.slice(0, 77).replace(/\s+\S*$/, '')}…`);

/**
 * The listing of an export: every message an item. An export may cover only a date range, so it is a window: a
 * message missing from it is removed only when it vanished from between two messages that are still there.
 */
export function listing(messages: Message[], state: Record<string, unknown>): Extract<Listing, { entries: Entry[] }> {
  const entries = messages.map(
    (m): Entry => ({
      externalId: m.id,
      version: Ids.fingerprint(JSON.stringify(m)),
      publishedAt: m.sentAt,
      load: async () => ({ title: titleOf(m), sourceUrl: m.url, publishedAt: m.sentAt, author: m.author, document: fromPlainText(m.text), metadata: { format: 'subtext' } }),
    }),
  );
  return { entries, coverage: { kind: 'window' }, state };
}

/** The export format of a file or response: by content type or extension, else by its first character. */
export function formatOf(name: string, contentType: string | undefined, text: string): 'json' | 'csv' {
  if (/json/i.test(contentType ?? '') || /\.json$/i.test(name)) return 'json';
  if (/csv/i.test(contentType ?? '') || /\.csv$/i.test(name)) return 'csv';
  return /^\s*[[{]/.test(text) ? 'json' : 'csv';
}

/** Subtext broadcast messages from a JSON (or CSV) export at a URL, fetched with a conditional request. */
export const connector: Connector = {
  kind: 'subtext',
  async list(context) {
    const validators = (context.state.validators as Record<string, string> | undefined) ?? {};
    const response = await context.fetcher.get(context.source, { validators, accept: 'application/json, text/csv;q=0.9' });
    if (response.status === 304) return { unchanged: true, state: context.state };
    const warnings: string[] = [];
    const text = Charset.decode(response.body, response.contentType, (note) => warnings.push(`export: ${note}`));
    let messages: Message[];
    try {
      messages = parseExport(text, formatOf(new URL(response.url).pathname, response.contentType, text));
    } catch (error) {
      throw new Error(`${response.url} is not a Subtext export: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { ...listing(messages, { validators: response.validators }), warnings };
  },
};
