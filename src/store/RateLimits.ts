import type { Sql } from './Sql.js';

/**
 * Token buckets in the database: every process on it draws a key's requests from one bucket, so several instances
 * behind a load balancer give a caller one limit, not one each. A request refills the bucket for the time passed since
 * the last and takes a token if a whole one is there, in one statement: two processes taking at once are serialized
 * on the key's row, and neither reads a count the other is about to change.
 */

/** A key's bucket: `capacity` tokens, refilled at `perMs` tokens a millisecond. */
export type Bucket = { key: string; capacity: number; perMs: number; now: number };

/** Whether the request took a token, and what the bucket holds after it. */
export type Taken = { granted: boolean; tokens: number };

/** Takes a token from the key's bucket (made full on first use) if one is there. */
export async function take(sql: Sql, bucket: Bucket): Promise<Taken> {
  const [least, greatest] = sql.dialect === 'postgres' ? ['least', 'greatest'] : ['min', 'max'];
  // excluded.tokens + 1 is the capacity, excluded.at the time of this request.
  const refilled = `${least}(excluded.tokens + 1, rate_buckets.tokens + ${greatest}(0, excluded.at - rate_buckets.at) * CAST(? AS DOUBLE PRECISION))`;
  const row = await sql.get<{ tokens: number; granted: boolean | number }>(
    `INSERT INTO rate_buckets (key, tokens, at, granted) VALUES (?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET
       tokens = CASE WHEN ${refilled} >= 1 THEN ${refilled} - 1 ELSE ${refilled} END,
       at = ${greatest}(rate_buckets.at, excluded.at),
       granted = ${refilled} >= 1
     RETURNING tokens, granted`,
    [bucket.key, bucket.capacity - 1, bucket.now, sql.dialect === 'postgres' ? true : 1, bucket.perMs, bucket.perMs, bucket.perMs, bucket.perMs],
  );
  return { granted: Boolean(row!.granted), tokens: Number(row!.tokens) };
}

/** Forgets buckets untouched since `before` (full again by now: the same as none). Returns how many. */
export async function forget(sql: Sql, before: number): Promise<number> {
  return sql.run('DELETE FROM rate_buckets WHERE at < ?', [before]);
}

/** How many keys have a bucket. */
export async function count(sql: Sql): Promise<number> {
  return Number((await sql.get<{ n: number }>('SELECT count(*) AS n FROM rate_buckets'))!.n);
}
