import fs from 'node:fs';
import type { QueryDay } from '../../store/QueryDays.js';
import { type Command, jsonOption, number, text, UsageError } from '../Command.js';
import type { Output } from '../Output.js';

/** One profile's day: queries by outcome, what answers earned per rail, and what balances paid. */
export type DayStats = {
  day: string;
  answered: number;
  /** Free: nothing relevant, or no grounded answer. */
  unanswered: number;
  /** Asked to pay on-chain (a 402), and not (yet) paid. */
  challenged: number;
  /** Turned away: a bad key, no balance, an invalid request, a refused payment. */
  refused: number;
  failed: number;
  /** USD received on-chain for answers, by rail. */
  revenueUsd: Record<string, number>;
  /** Balance units charged for answers: unlocks and credits. */
  unlocks: number;
  credits: number;
};

export type ProfileStats = { profile: string; days: DayStats[]; total: Omit<DayStats, 'day'> };

export type Stats = {
  since: string;
  until: string;
  profiles: ProfileStats[];
  /** Money owed back to wallets (it moved with no answer), per day and rail, in USD: spent by their next answers. */
  walletCredits: { day: string; rail: string; usd: number }[];
};

const empty = (): Omit<DayStats, 'day'> => ({ answered: 0, unanswered: 0, challenged: 0, refused: 0, failed: 0, revenueUsd: {}, unlocks: 0, credits: 0 });

function add(into: Omit<DayStats, 'day'>, row: QueryDay): void {
  const outcome = row.outcome as 'answered' | 'unanswered' | 'challenged' | 'refused' | 'failed';
  if (outcome in into && typeof into[outcome] === 'number') into[outcome] += row.queries;
  if (row.usdMicros > 0) into.revenueUsd[row.pay] = (into.revenueUsd[row.pay] ?? 0) + row.usdMicros / 1_000_000;
  if (row.pay === 'unlock') into.unlocks += row.units;
  if (row.pay === 'credits') into.credits += row.units;
}

/** Every day from `since` to `until` (YYYY-MM-DD, UTC), both included. */
function daysBetween(since: string, until: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(`${since}T00:00:00Z`); t <= Date.parse(`${until}T00:00:00Z`); t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}

/** The stats of the days from `since` to `until`, per profile (`global` for the global endpoint), every day listed. */
export function summarize(rows: readonly (QueryDay & { slug: string })[], credits: readonly { rail: string; amountMillicents: number; createdAt: number }[], range: { since: string; until: string }): Stats {
  const days = daysBetween(range.since, range.until);
  const byProfile = new Map<string, Map<string, DayStats>>();
  for (const row of rows) {
    if (row.day < range.since || row.day > range.until) continue;
    const profile = row.profileId === '' ? 'global' : row.slug || `(removed ${row.profileId})`;
    let perDay = byProfile.get(profile);
    if (!perDay) byProfile.set(profile, (perDay = new Map(days.map((day) => [day, { day, ...empty() }]))));
    add(perDay.get(row.day)!, row);
  }
  const profiles = [...byProfile.entries()]
    .sort(([a], [b]) => (a === 'global' ? -1 : b === 'global' ? 1 : a.localeCompare(b)))
    .map(([profile, perDay]) => {
      const list = [...perDay.values()];
      const total = empty();
      for (const d of list) {
        for (const key of ['answered', 'unanswered', 'challenged', 'refused', 'failed', 'unlocks', 'credits'] as const) total[key] += d[key];
        for (const [rail, usd] of Object.entries(d.revenueUsd)) total.revenueUsd[rail] = (total.revenueUsd[rail] ?? 0) + usd;
      }
      return { profile, days: list, total };
    });
  const owed = new Map<string, { day: string; rail: string; usd: number }>();
  for (const c of credits) {
    const day = new Date(c.createdAt).toISOString().slice(0, 10);
    if (day < range.since || day > range.until) continue;
    const key = `${day} ${c.rail}`;
    const found = owed.get(key) ?? { day, rail: c.rail, usd: 0 };
    found.usd += c.amountMillicents / 100_000;
    owed.set(key, found);
  }
  return { since: range.since, until: range.until, profiles, walletCredits: [...owed.values()] };
}

const money = (usd: number) => `$${usd.toFixed(usd >= 100 ? 0 : 2)}`;

/** A bar of `value` against `max`, `width` characters at most, in eighths of a block. */
export function bar(value: number, max: number, width = 30): string {
  if (value <= 0 || max <= 0) return '';
  const eighths = Math.max(1, Math.round((value / max) * width * 8));
  return '█'.repeat(Math.floor(eighths / 8)) + (eighths % 8 === 0 ? '' : '▏▎▍▌▋▊▉'[(eighths % 8) - 1]!);
}

function print(out: Output, stats: Stats): void {
  out.line(`queries per profile and day, ${stats.since} to ${stats.until} (UTC); bars: answered`);
  if (stats.profiles.length === 0) out.line('(no queries counted in these days)');
  for (const p of stats.profiles) {
    const max = Math.max(...p.days.map((d) => d.answered));
    const rails = Object.keys(p.total.revenueUsd).sort();
    out.line('');
    const t = p.total;
    const earned = rails.map((r) => `${money(t.revenueUsd[r]!)} ${r}`);
    const paid = [...earned, ...(t.unlocks > 0 ? [`${t.unlocks} unlocks`] : []), ...(t.credits > 0 ? [`${t.credits} credits`] : [])];
    out.line(`${p.profile}: ${t.answered} answered, ${t.unanswered} unanswered, ${t.challenged} asked to pay, ${t.refused} refused, ${t.failed} failed${paid.length > 0 ? `; paid ${paid.join(', ')}` : ''}`);
    out.table(
      p.days
        .filter((d) => d.answered + d.unanswered + d.challenged + d.refused + d.failed > 0)
        .map((d) => ({
          day: d.day,
          answered: d.answered,
          unanswered: d.unanswered,
          // The same counts the summary line above gives: asked to pay apart from refused.
          'asked to pay': d.challenged,
          refused: d.refused,
          failed: d.failed,
          ...Object.fromEntries(rails.map((r) => [r, money(d.revenueUsd[r] ?? 0)])),
          unlocks: d.unlocks,
          credits: d.credits,
          '': bar(d.answered, max),
        })),
    );
  }
  if (stats.walletCredits.length > 0) {
    out.line('');
    out.line('credits owed to wallets (money that moved with no answer; spent by their next answers):');
    out.table(stats.walletCredits.map((c) => ({ day: c.day, rail: c.rail, owed: money(c.usd) })));
  }
}

export const stats: Command = {
  name: 'stats',
  summary: 'Queries per profile and day (answered, unanswered, asked to pay, refused, failed), revenue by rail, balance units charged and credits owed to wallets, with a bar chart; --json for scripts.',
  usage: 'stats [--days N (30)] [--profile SLUG|global] [--json]',
  options: { days: { type: 'string' }, profile: { type: 'string' }, ...jsonOption },
  async run({ config, services: open, out }, { values }) {
    const days = number(values, 'days', { min: 1, max: 366, integer: true }) ?? 30;
    const only = text(values, 'profile');
    // A mistyped DATABASE_PATH would otherwise make an empty database and report nothing counted.
    if (config.databasePath !== undefined && config.databasePath !== ':memory:' && !fs.existsSync(config.databasePath)) {
      throw new UsageError(`no database at ${config.databasePath}: set DATABASE_PATH to the one \`profile-edge serve\` uses`);
    }
    const services = await open();
    // What this process or another counted in the last seconds is in the store before it is read.
    await services.tally.flush();
    const now = Date.now();
    const until = new Date(now).toISOString().slice(0, 10);
    const since = new Date(now - (days - 1) * 86_400_000).toISOString().slice(0, 10);
    const [rows, credits] = await Promise.all([services.store.queryDays.since(since), services.store.payments.creditsGranted(Date.parse(`${since}T00:00:00Z`))]);
    const summary = summarize(rows, credits, { since, until });
    if (only !== undefined) {
      const slug = only === 'global' ? 'global' : (await services.store.profiles.byHandle(only))?.slug;
      if (slug === undefined) throw new UsageError(`no profile "${only}"`);
      summary.profiles = summary.profiles.filter((p) => p.profile === slug);
    }
    if (values.json) out.json(summary);
    else print(out, summary);
  },
};
