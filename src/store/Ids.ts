import crypto from 'node:crypto';

/** A random identifier such as `acct_3f9c2a7d1e0b4c55`. */
export function random(prefix: string): string {
  return `${prefix}_${crypto.randomBytes(8).toString('hex')}`;
}

/** A deterministic identifier derived from its parts, so re-ingesting the same content yields the same ids. */
export function stable(prefix: string, ...parts: (string | number)[]): string {
  const digest = crypto.createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${prefix}_${digest.slice(0, 16)}`;
}

/** SHA-256 hex of a string: the content fingerprint of an item. */
export function fingerprint(content: string | Uint8Array): string {
  return crypto.createHash('sha256').update(content).digest('hex');
}
