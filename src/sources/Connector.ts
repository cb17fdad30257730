import type { ChannelKind } from '../contract/Channel.js';
import type { Document } from '../ingest/Document.js';
import type { Logger } from '../log/Logger.js';
import type { StoredChannel } from '../store/Channels.js';
import type { Fetcher } from './Fetcher.js';

/** One item as a source gives it: metadata, and the text as a document the chunker cuts. */
export type SourceItem = {
  title: string;
  sourceUrl?: string | undefined;
  publishedAt?: number | undefined;
  author?: string | undefined;
  document: Document;
  /** What an operator or a later reader may want to know: format, where the text came from (transcript, notes). */
  metadata?: Record<string, unknown> | undefined;
};

/**
 * An item's entry in a source's listing. `version` changes whenever the item does (a hash of its entry in the feed,
 * an edit time): an unchanged version is skipped without loading the item.
 */
export type Entry = {
  externalId: string;
  version: string;
  publishedAt?: number | undefined;
  /** Keep the stored item as it is (its text came from elsewhere, such as imported captions); load only if absent. */
  keep?: boolean | undefined;
  load(): Promise<SourceItem>;
};

/**
 * What a listing says about items it does not mention.
 * - `complete`: the source lists everything it has, so anything missing is gone.
 * - `window`: a feed or an export shows some of its entries (the newest, a date range, a pinned old one among them).
 *   An item missing now is gone only when it was in the previous listing and both its neighbours there are still
 *   listed: it vanished from the middle of a run that is otherwise intact. Items at either end of the previous
 *   listing may simply have scrolled off, and are kept.
 * - `partial`: the listing is known to be incomplete (a walk cut short, a part that could not be read): nothing is
 *   removed.
 */
export type Coverage = { kind: 'complete' } | { kind: 'window' } | { kind: 'partial'; reason: string };

export type Listing =
  | { unchanged: true; state: Record<string, unknown> }
  | { unchanged?: false; entries: Entry[]; coverage: Coverage; state: Record<string, unknown> };

export type SyncContext = {
  channel: StoredChannel;
  /** The source's address (the channel's `sourceUrl`). */
  source: string;
  fetcher: Fetcher;
  /** What the last successful sync kept (validators, cursors); empty on the first sync. */
  state: Record<string, unknown>;
  logger: Logger;
  /** The metadata of an item already stored for this channel, by its id at the source. */
  stored(externalId: string): { metadata: Record<string, unknown> } | undefined;
};

/** A kind of source: lists its items, each loaded on demand. */
export type Connector = {
  kind: ChannelKind;
  list(context: SyncContext): Promise<Listing>;
};

/** An item that could not be read: the sync records it and goes on with the others. */
export class SourceError extends Error {
  override name = 'SourceError';
}
