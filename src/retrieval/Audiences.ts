import type { Store } from '../store/Store.js';

/**
 * Who may read a channel's chunks, which decides whose statistics they count in: everyone (`public`: a live public
 * channel of a public or unlisted profile), only the authorized readers of one profile (`profile:<id>`: a private
 * channel, or any channel of a private profile), or nobody (a paused channel: it never answers).
 */
export type Audience = 'public' | `profile:${string}` | null;

export const publicAudience = 'public';

/** The audience of every channel. */
export async function read(store: Store): Promise<Map<string, Audience>> {
  const rows = await store.channels.audiences();
  return new Map(
    rows.map((r): [string, Audience] => [
      r.id,
      r.status === 'paused' ? null : r.accessLevel === 'public' && r.visibility !== 'private' ? publicAudience : `profile:${r.profileId}`,
    ]),
  );
}
