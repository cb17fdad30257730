import type { Store } from '../store/Store.js';
import type { Evidence } from './Evidence.js';

/** What a query mode selects from the ranked evidence, and the context expanded depth joins to it. */

/** Maximal marginal relevance over items: each further chunk of an already chosen item counts for less. */
export function diversified(ranked: Evidence[], limit: number, penalty: number): Evidence[] {
  const chosen: Evidence[] = [];
  const perItem = new Map<string, number>();
  const pool = [...ranked];
  while (chosen.length < limit && pool.length > 0) {
    let best = 0;
    let bestValue = -Infinity;
    pool.forEach((e, i) => {
      const value = e.score - penalty * (perItem.get(e.itemId) ?? 0);
      if (value > bestValue) {
        bestValue = value;
        best = i;
      }
    });
    const [e] = pool.splice(best, 1);
    chosen.push(e!);
    perItem.set(e!.itemId, (perItem.get(e!.itemId) ?? 0) + 1);
  }
  return chosen;
}

/** Evidence spread over time: the best chunk of each year first, then the rest, returned oldest first. */
export function acrossTime(ranked: Evidence[], limit: number): Evidence[] {
  const byYear = new Map<string, Evidence[]>();
  for (const e of ranked) {
    const year = e.publishedAt === null ? 'unknown' : String(new Date(e.publishedAt).getUTCFullYear());
    byYear.set(year, [...(byYear.get(year) ?? []), e]);
  }
  const chosen = new Set<Evidence>();
  for (let round = 0; chosen.size < limit && round < limit; round++) {
    for (const list of byYear.values()) if (list[round] && chosen.size < limit) chosen.add(list[round]!);
  }
  return [...chosen].sort((a, b) => (a.publishedAt ?? Infinity) - (b.publishedAt ?? Infinity) || b.score - a.score);
}

/** Balanced evidence for each compared subject: alternate between the subjects' own rankings. */
export function balanced(perSubject: Evidence[][], limit: number): Evidence[] {
  const chosen = new Map<string, Evidence>();
  for (let i = 0; chosen.size < limit && perSubject.some((l) => l[i]); i++) {
    for (const list of perSubject) {
      const e = list[i];
      if (e && !chosen.has(e.chunkId) && chosen.size < limit) chosen.set(e.chunkId, e);
    }
  }
  return [...chosen.values()];
}

/** Joins each selected chunk with its neighbours (same item, ordinal ±1) for expanded context. */
export async function expand(store: Store, selected: Evidence[]): Promise<void> {
  for (const e of selected) {
    const around = await store.chunks.texts(e.itemId, [e.ordinal - 1, e.ordinal + 1]);
    const before = around.find((n) => n.ordinal === e.ordinal - 1);
    const after = around.find((n) => n.ordinal === e.ordinal + 1);
    e.text = [before?.text, e.chunkText, after?.text].filter((t): t is string => t !== undefined).join('\n\n');
  }
}
