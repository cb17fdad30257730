/** URLs and dates as sources and operators write them, read one way everywhere. */

/** An absolute http(s) URL (resolved against `base` when relative), or undefined for anything else. */
export function httpUrl(value: string | undefined, base?: string): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value.trim(), base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Epoch milliseconds of a date written as ISO 8601 or RFC 822, or undefined. A date-time without a zone is UTC: it
 * would otherwise be read in the server's local zone.
 */
export function dateMs(value: string | undefined): number | undefined {
  const s = value?.trim();
  if (!s) return undefined;
  const isoZoneless = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(s);
  const rfcZoneless = /^([A-Za-z]{3},?\s+)?\d{1,2}\s+[A-Za-z]{3,}\s+\d{2,4}\s+\d{1,2}:\d{2}(:\d{2})?$/.test(s);
  const ms = Date.parse(isoZoneless ? `${s.replace(' ', 'T')}Z` : rfcZoneless ? `${s} GMT` : s);
  return Number.isFinite(ms) ? ms : undefined;
}
