/**
 * Reading parsed third-party data (feeds, API responses) whose shape is not guaranteed: each accessor returns what
 * it asks for, or nothing, never throws.
 */
export type Loose = Record<string, unknown>;

/** An object, or undefined for anything else (arrays included). */
export const record = (v: unknown): Loose | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Loose) : undefined);

/** An array as it is, a single value as a one-item array, nothing as an empty one. */
export const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);

/** The objects of `list(v)`. */
export const records = (v: unknown): Loose[] => list(v).map(record).filter((x): x is Loose => x !== undefined);

/** A non-blank string, trimmed, or undefined. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
