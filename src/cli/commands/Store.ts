import path from 'node:path';
import * as Copy from '../../store/Copy.js';
import type { Target } from '../../store/Store.js';
import { type Command, jsonOption, number, required } from '../Command.js';
import type { Progress } from '../Output.js';

/** A place as the operator writes it: a postgres:// URL, or else a SQLite file (relative to the working directory). */
const place = (value: string): Target => (/^postgres(ql)?:\/\//.test(value) ? { url: value } : { path: path.resolve(value) });

/** The first characters of a checksum: enough to tell two apart in a table. */
const short = (sum: string) => sum.slice(0, 16);

export const copy: Command = {
  name: 'store copy',
  summary:
    'Copy a whole store into an empty database, SQLite or PostgreSQL either way (accounts and key hashes, balances, ledger, payments, profiles, channels, content, search rows, term model, vectors), in batches with progress; a copy stopped part-way resumes when run again. Ends by comparing row counts and checksums of every table (exit 1 when one differs).',
  usage: 'store copy --from <SQLite file | postgres://URL> --to <SQLite file | postgres://URL> [--batch N] [--json]',
  options: { from: { type: 'string' }, to: { type: 'string' }, batch: { type: 'string' }, ...jsonOption },
  async run({ out }, { values }) {
    const from = place(required(values, 'from'));
    const to = place(required(values, 'to'));
    const batch = number(values, 'batch', { min: 1, max: 100_000, integer: true });
    // One bar while rows are copied, then one while both sides are compared.
    let bar: { phase: Copy.Progress['phase']; progress: Progress } | undefined;
    let result: Copy.Result;
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
    } catch (error) {
      // Refused before anything was copied: the command as given cannot run.
      if (error instanceof Copy.Refused) {
        out.error(error.message);
        return 2;
      }
      throw error;
    } finally {
      bar?.progress.stop();
    }
    const differing = result.tables.filter((t) => !t.same).map((t) => t.table);
    if (values.json) out.json(result);
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
      const verdict = differing.length === 0 ? 'every table matches' : `${differing.length} differ: ${differing.join(', ')}`;
      out.line(`${how} ${result.copied} rows from ${result.from} to ${result.to} in ${result.seconds.toFixed(1)} s; ${verdict}`);
    }
    return differing.length === 0 ? 0 : 1;
  },
};
