import crypto from 'node:crypto';

/** The two kinds of secret the service issues, told apart by their prefix. */
export type SecretKind = 'api_key' | 'bearer_token';

const prefixes: Record<SecretKind, string> = { api_key: 'pek', bearer_token: 'peb' };

/** A freshly minted secret: `token` is shown once; only `id` and `hash` are stored. */
export type MintedSecret = { id: string; token: string; hash: Buffer };

/** Mints `<prefix>_<id>_<secret>`: the id locates the row, the 256-bit secret is stored only as its SHA-256. */
export function mint(kind: SecretKind): MintedSecret {
  const id = crypto.randomBytes(8).toString('hex');
  const secret = crypto.randomBytes(32).toString('base64url');
  return { id, token: `${prefixes[kind]}_${id}_${secret}`, hash: hash(secret) };
}

/** Splits a presented token into its id and secret, or undefined when it is not of the kind's form. */
export function parse(kind: SecretKind, token: string): { id: string; secret: string } | undefined {
  const match = /^([a-z]{3})_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match || match[1] !== prefixes[kind]) return undefined;
  return { id: match[2]!, secret: match[3]! };
}

/** SHA-256 of a high-entropy secret; a slow hash adds nothing for 256 random bits. */
export function hash(secret: string): Buffer {
  return crypto.createHash('sha256').update(secret, 'utf8').digest();
}

/** Compares a presented secret with a stored hash in constant time. */
export function matches(secret: string, storedHash: Buffer): boolean {
  const presented = hash(secret);
  return presented.length === storedHash.length && crypto.timingSafeEqual(presented, storedHash);
}
