import { lazy } from '../../errors/Lazy.js';
import path from 'node:path';
import type * as CopyModule from '../../store/Copy.js';
import type { Target } from '../../store/Store.js';
import { Unavailable } from '../../store/Sql.js';
import { type Command, jsonOption, number, required, UsageError, type Values } from '../Command.js';
import type { Output, Progress } from '../Output.js';

const loadCopy = lazy('The store copy', () => import('../../store/Copy.js'));

/** A PostgreSQL URL as DATABASE_URL takes one (src/config/Config.ts). */
const postgresUrl = /^postgres(ql)?:\/\/[^\s]+$/;

/** Anything written as a URL: `mysql://...`, `postgress://...`. */
const urlScheme = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * A place as the operator writes it: a postgres:// URL, or else a SQLite file (relative to the working directory).
 * Another URL is refused rather than taken for a file name; the message names its scheme only, never what follows.
 */
function place(values: Values, option: 'from' | 'to'): Target {
  const value = required(values, option);
  if (postgresUrl.test(value)) return { url: value };
  const scheme = urlScheme.exec(value)?.[1];
  if (scheme !== undefined) {
    const got = /^postgres(ql)?$/i.test(scheme) ? 'one with a space in it' : `a ${scheme}:// URL`;
    throw new UsageError(`--${option} must be a postgres:// (or postgresql://) URL (got ${got}), or a SQLite file`);
  }
  return { path: path.resolve(value) };
}

/** The first characters of a checksum: enough to tell two apart in a table. */
const short = (sum: string) => sum.slice(0, 16);

/** What a difference after a copy means, and what to do about it. */
const remedy =
  "the source changed while it was copied, or the target was written since: drop the target and copy again, with the source's service stopped";

/** What stopped a copy, as `--json` prints it (the service's error shape), with the exit status. */
function failure(error: unknown, Copy: typeof CopyModule): { error: string; message: string; exit: number } {
  if (error instanceof UsageError) return { error: 'invalid_usage', message: error.message, exit: 2 };
  if (error instanceof Copy.Refused) return { error: 'refused', message: error.message, exit: 2 };
  if (error instanceof Copy.Stopped) return { error: 'stopped', message: error.message, exit: 1 };
  if (error instanceof Unavailable) return { error: 'service_unavailable', message: error.detail, exit: 1 };
  return { error: 'internal_error', message: error instanceof Error ? error.message : String(error), exit: 1 };
}

export const copy: Command = {
  name: 'store copy',
  summary:
    'Copy a whole store into an empty database, SQLite or PostgreSQL either way (accounts and key hashes, balances, ledger, payments, profiles, channels, content, search rows, term model, vectors), in batches with progress; a copy stopped part-way resumes when run again. Ends by comparing row counts and checksums of every table (exit 1 when one differs).',
  usage: 'store copy --from <SQLite file | postgres://URL> --to <SQLite file | postgres://URL> [--batch N] [--json]',
  options: { from: { type: 'string' }, to: { type: 'string' }, batch: { type: 'string' }, ...jsonOption },
  async run({ out }, { values }) {
    const Copy = await loadCopy();
    try {
      return await copyAndCompare(out, values, Copy);
    } catch (error) {
      if (values.json) {
        const { exit, ...printed } = failure(error, Copy);
        out.json(printed);
        return exit;
      }
      // Refused before anything was copied: the command as given cannot run.
      if (error instanceof Copy.Refused) {
        out.error(error.message);
        return 2;
      }
      if (error instanceof Copy.Stopped) {
        out.error(error.message);
        return 1;
      }
      // Usage errors, an unreachable database and the unforeseen are the CLI's to report.
      throw error;
    }
  },
};

/** Copies as the options say, prints the comparison, and returns the exit status. */
async function copyAndCompare(out: Output, values: Values, Copy: typeof CopyModule): Promise<number> {
  const from = place(values, 'from');
  const to = place(values, 'to');
  const batch = number(values, 'batch', { min: 1, max: 100_000, integer: true });
  // One bar while rows are copied, then one while both sides are compared.
  let bar: { phase: CopyModule.Progress['phase']; progress: Progress } | undefined;
  let result: CopyModule.Result;
  try {
    result = await Copy.copy({
      from,
      to,
      ...(batch !== undefined && { batch }),
      onProgress: ({ phase, table, done, total }) => {
        if (bar?.phase !== phase) {
          bar?.progress.stop();
          bar = { phase, progress: out.progress(total, phase === 'copy' ? 'copy' : 'compare') };
        }
        bar.progress.update(done, table);
      },
    });
  } finally {
    bar?.progress.stop();
  }
  const differing = result.tables.filter((t) => !t.same).map((t) => t.table);
  const verdict = differing.length === 0 ? undefined : `${differing.length === 1 ? '1 table differs' : `${differing.length} tables differ`} (${differing.join(', ')}): ${remedy}`;
  if (values.json) out.json(verdict === undefined ? result : { ...result, message: verdict });
  else {
    out.table(
      result.tables.map((t) => ({
        table: t.table,
        'source rows': t.rows.source,
        'target rows': t.rows.target,
        'source checksum': short(t.checksum.source),
        'target checksum': short(t.checksum.target),
        same: t.same ? 'yes' : 'NO',
      })),
    );
    const how = result.resumed ? (result.copied > 0 ? 'resumed, copied' : 'already copied:') : 'copied';
    out.line(`${how} ${result.copied} rows from ${result.from} to ${result.to} in ${result.seconds.toFixed(1)} s; ${verdict ?? 'every table matches'}`);
  }
  return differing.length === 0 ? 0 : 1;
}
