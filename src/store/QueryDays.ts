import type { Sql } from './Sql.js';

/** Queries counted on one day, for one profile's endpoint ('' for the global one), by outcome and payment. */
export type QueryDay = { day: string; profileId: string; outcome: string; pay: string; queries: number; usdMicros: number; units: number };

/** Adds counted queries to the days they fell on, in one transaction. */
export async function add(sql: Sql, rows: readonly QueryDay[]): Promise<void> {
  if (rows.length === 0) return;
  await sql.transaction(async (tx) => {
    for (const r of rows) {
      await tx.run(
        `INSERT INTO query_days (day, profile_id, outcome, pay, queries, usd_micros, units) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (day, profile_id, outcome, pay) DO UPDATE SET
           queries = query_days.queries + excluded.queries, usd_micros = query_days.usd_micros + excluded.usd_micros, units = query_days.units + excluded.units`,
        [r.day, r.profileId, r.outcome, r.pay, r.queries, r.usdMicros, r.units],
      );
    }
  });
}

/** Every day from `since` (YYYY-MM-DD) on, with the profile's slug ('' for the global endpoint, or a profile since removed). */
export async function since(sql: Sql, day: string): Promise<(QueryDay & { slug: string })[]> {
  const rows = await sql.all<QueryDay & { slug: string | null }>(
    `SELECT d.day, d.profile_id AS profileId, d.outcome, d.pay, d.queries, d.usd_micros AS usdMicros, d.units, p.slug
     FROM query_days d LEFT JOIN profiles p ON p.id = d.profile_id WHERE d.day >= ? ORDER BY d.day, p.slug, d.outcome, d.pay`,
    [day],
  );
  return rows.map((r) => ({ ...r, queries: Number(r.queries), usdMicros: Number(r.usdMicros), units: Number(r.units), slug: r.slug ?? '' }));
}
