import crypto from 'node:crypto';

/** What a link's signature says of a request for one item: it opens it, it did until it expired, or it says nothing. */
export type Verdict = 'valid' | 'expired' | 'invalid';

/**
 * What a signature opens: the cited passages of one item (the profile's slug as linked, the item id, and the chunk ids
 * the link cites, in any order). The whole item stays for callers who may read it.
 */
export type LinkedItem = { slug: string; itemId: string; chunkIds: readonly string[] };

/** Signs and verifies item links that open private content without authorization, until they expire. */
export type SignedLinks = {
  /** The query parameters that open the item until the link expires (unix seconds). */
  sign(item: LinkedItem): Promise<{ expires: number; sig: string }>;
  /**
   * Whether `expires` and `sig`, as a request sent them, open the item; anything malformed is `invalid`, and so is an
   * expiry later than this signer could have given now (the link lifetime from now, rounded up as `sign` rounds).
   */
  verify(link: LinkedItem & { expires: unknown; sig: unknown }): Promise<Verdict>;
};

/** Expiries fall on whole minutes: links to one item issued within a minute are the same link, and say less of when. */
const grain = 60;

/**
 * Links signed with HMAC-SHA256 over the slug, the item id, the cited chunk ids and the expiry. `secret` is read at the first signature or
 * verification (a kept key is made only when needed); `now` is the clock in milliseconds, for tests. A link whose
 * expiry lies beyond the lifetime from now is refused whatever its signature: one signed with a leaked key cannot be
 * made to last longer than a link this service gives.
 */
export function create(options: { secret: string | (() => Promise<string>); ttlSeconds: number; now?: () => number }): SignedLinks {
  const now = options.now ?? Date.now;
  let key: Promise<Buffer> | undefined;
  const mac = async (item: LinkedItem, expires: number): Promise<Buffer> => {
    key ??= typeof options.secret === 'string' ? Promise.resolve(Buffer.from(options.secret)) : options.secret().then((secret) => Buffer.from(secret));
    // A key that could not be read (the store was down) is read again next time.
    const bytes = await key.catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    // A JSON array cannot be read two ways, whatever the slug or id hold; the tag keeps these MACs apart from any other.
    // v2 binds the cited chunks: a v1 link (the whole item) opens nothing any more.
    const chunks = [...new Set(item.chunkIds)].sort();
    return crypto.createHmac('sha256', bytes).update(JSON.stringify(['profile-edge citation link v2', item.slug, item.itemId, chunks, expires])).digest();
  };
  return {
    async sign(item) {
      const expires = Math.ceil((now() / 1000 + options.ttlSeconds) / grain) * grain;
      return { expires, sig: (await mac(item, expires)).toString('base64url') };
    },
    async verify({ expires, sig, ...item }) {
      if (typeof expires !== 'string' || typeof sig !== 'string' || !/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{1,100}$/.test(sig)) return 'invalid';
      // `sign` gives at most the lifetime plus one grain from now (it rounds up to a whole grain).
      if (Number(expires) * 1000 > now() + (options.ttlSeconds + grain) * 1000) return 'invalid';
      const given = Buffer.from(sig, 'base64url');
      const expected = await mac(item, Number(expires));
      // Only the signature's one spelling: base64url decoding ignores stray bits in the last character.
      if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected) || given.toString('base64url') !== sig) return 'invalid';
      return Number(expires) * 1000 > now() ? 'valid' : 'expired';
    },
  };
}

/** `url` with the signature's parameters appended. */
export function withSignature(url: string, signature: { expires: number; sig: string }): string {
  return `${url}${url.includes('?') ? '&' : '?'}expires=${signature.expires}&sig=${signature.sig}`;
}
