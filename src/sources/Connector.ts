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
  /**
   * Why this text only stands in for now: the real text (a transcript, captions, an article) failed for a passing
   * reason. A new item is indexed from it at once, and the next sync tries the real text again.
   */
  provisional?: string | undefined;
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
  | {
      unchanged?: false;
      entries: Entry[];
      coverage: Coverage;
      state: Record<string, unknown>;
      /** How the listing was read that an operator should know (an encoding guessed from the bytes). */
      warnings?: string[] | undefined;
    };

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

/** A failure that may pass (a host down, rate limited): worth another try on the next sync. */
export class RetryLater extends Error {
  override name = 'RetryLater';
}

/** Whether an item is indexed from its real text (not from stand-in text still waiting for it). */
export function hasRealText(context: SyncContext, externalId: string): boolean {
  const stored = context.stored(externalId);
  return stored !== undefined && stored.metadata.pendingText === undefined;
}

/**
 * Loads an item's real text; when that fails for a passing reason, an item not yet indexed gets its stand-in text
 * (show notes, a description, a summary) now, marked provisional, while an indexed one keeps what it has.
 */
export async function withStandIn(
  load: () => Promise<SourceItem>,
  standIn: () => SourceItem,
  options: { indexed: boolean; passing: (error: unknown) => boolean },
): Promise<SourceItem> {
  try {
    return await load();
  } catch (error) {
    if (options.indexed || !options.passing(error)) throw error;
    return { ...standIn(), provisional: error instanceof Error ? error.message : String(error) };
  }
}
