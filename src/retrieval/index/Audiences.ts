import type { Store } from '../../store/Store.js';

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

/**
 * Channels and audiences by number, as the lexical index keeps them beside its documents: each channel's number, and
 * the number of its audience (-1 for none: paused). Audience numbers are given once and kept for the index's life.
 */
export class ChannelAudiences {
  private readonly channelIndex = new Map<string, number>();
  /** Each channel's audience number, -1 for none (paused). */
  private channelAudience: number[] = [];
  private readonly audienceIndex = new Map<string, number>([[publicAudience, 0]]);

  /** How many channels have a number. */
  get size(): number {
    return this.channelIndex.size;
  }

  /** A channel's number, or undefined for a channel never seen. */
  find(channelId: string): number | undefined {
    return this.channelIndex.get(channelId);
  }

  /** The audience number of a channel, by the channel's number: -1 for none. */
  audience(channel: number): number {
    return this.channelAudience[channel]!;
  }

  /** A channel's number, given one (with no audience until one is taken in) when it has none. */
  number(channelId: string): number {
    let index = this.channelIndex.get(channelId);
    if (index === undefined) {
      // No audience until one is taken in: a channel deleted since its chunk was written answers nobody.
      index = this.channelIndex.size;
      this.channelIndex.set(channelId, index);
      this.channelAudience.push(-1);
    }
    return index;
  }

  /** Takes in every channel's audience as last read; true when one holding documents moved. */
  take(audiences: Map<string, Audience>): boolean {
    let moved = false;
    for (const [channelId, audience] of audiences) {
      const index = this.number(channelId);
      const number = this.audienceNumber(audience);
      if (this.channelAudience[index] !== number) {
        this.channelAudience[index] = number;
        moved = true;
      }
    }
    return moved;
  }

  /** Every channel with its audience, in the order of their numbers: what a snapshot keeps. */
  entries(): [string, Audience][] {
    const names = new Map([...this.audienceIndex].map(([name, n]) => [n, name as Audience]));
    return [...this.channelIndex.keys()].map((id, index) => [id, names.get(this.channelAudience[index]!) ?? null]);
  }

  /** An audience's number, given one when it has none. */
  audienceNumber(audience: Audience): number {
    if (audience === null) return -1;
    let n = this.audienceIndex.get(audience);
    if (n === undefined) {
      n = this.audienceIndex.size;
      this.audienceIndex.set(audience, n);
    }
    return n;
  }

  /** An audience's name, by its number. */
  audienceName(number: number): Audience {
    for (const [name, n] of this.audienceIndex) if (n === number) return name as Audience;
    return null;
  }

  /** Forgets every channel, for a rebuild that numbers them afresh; audience numbers stay. */
  clear(): void {
    this.channelIndex.clear();
    this.channelAudience = [];
  }
}
