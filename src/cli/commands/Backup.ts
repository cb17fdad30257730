import { lazy } from '../../errors/Lazy.js';
import type * as BackupModule from '../../store/Backup.js';
import type { Target } from '../../store/Store.js';
import { Unavailable } from '../../store/Sql.js';
import type { Config } from '../../config/Config.js';
import { type Command, jsonOption, required } from '../Command.js';
import type { Output } from '../Output.js';
import type { Problem } from '../../store/Books.js';

const loadBackup = lazy('Backup and restore', () => import('../../store/Backup.js'));

/** The configured store: DATABASE_URL, or the SQLite file. */
const storeOf = (config: Config): Target => (config.database.engine === 'postgres' ? { url: config.database.url } : { path: config.database.path });

/** Problems a restore lists: the first ones, and how many more. */
const shown = 20;

function listed(problems: Problem[]): string[] {
  const lines = problems.slice(0, shown).map((p) => `  ${p.message}`);
  if (problems.length > shown) lines.push(`  … and ${problems.length - shown} more`);
  return lines;
}

/** What stopped a backup or a restore, as `--json` prints it, and as a line otherwise; exit 1 either way. */
function failed(out: Output, json: boolean, error: unknown, Backup: typeof BackupModule): number {
  if (error instanceof Backup.Discrepant) {
    if (json) out.json({ error: 'discrepancies', message: error.message, count: error.problems.length, problems: error.problems });
    else {
      out.error(error.message);
      for (const line of listed(error.problems)) out.status(line);
      out.status('Restore into a new, empty store from another backup; or, once you know why they differ (see Backups in the README), restore this one anyway with --accept-discrepancies.');
    }
    return 1;
  }
  const refused = error instanceof Backup.Refused;
  if (!refused && !(error instanceof Backup.Failed) && !(error instanceof Unavailable)) throw error;
  const message = error instanceof Unavailable ? error.detail : error.message;
  if (json) out.json({ error: refused ? 'refused' : error instanceof Backup.Failed ? 'failed' : 'service_unavailable', message });
  else out.error(message);
  return 1;
}

const held = (rows: Record<string, number>) =>
  Object.entries(rows)
    .map(([table, n]) => `${n} ${table}`)
    .join(', ');

export const backup: Command = {
  name: 'backup',
  summary:
    'Back up the whole store to a new file while the server keeps serving (accounts and key hashes, balances, ledger, payments and credits, profiles, channels, content, indexes): SQLite with its online backup API, checked before it is kept; PostgreSQL with pg_dump in its custom format. The file is readable by its owner only and holds none of the secrets the service made for itself.',
  usage: 'backup --to FILE [--json]',
  options: { to: { type: 'string' }, ...jsonOption },
  async run({ config, out }, { values }) {
    const file = required(values, 'to');
    const Backup = await loadBackup();
    try {
      const result = await Backup.backup(storeOf(config), file);
      if (values.json) out.json(result);
      else {
        const size = result.bytes >= 1_048_576 ? `${(result.bytes / 1_048_576).toFixed(1)} MiB` : `${Math.ceil(result.bytes / 1024)} KiB`;
        out.line(`backed up to ${result.file} (${result.format === 'sqlite' ? 'SQLite' : 'pg_dump custom format'}, ${size}) in ${result.seconds.toFixed(1)} s`);
        out.line(`  holds ${held(result.rows)}`);
        out.line('  leaves out the secrets the service made for itself (a restored store makes new ones); readable by its owner only');
        out.line(`  restore into an empty store: profile-edge restore --from ${file}`);
      }
      return 0;
    } catch (error) {
      return failed(out, Boolean(values.json), error, Backup);
    }
  },
};

export const restore: Command = {
  name: 'restore',
  summary:
    'Restore a backup into the configured store, which must be empty (a store that holds anything is refused, exit 1). A SQLite backup restores into SQLite or PostgreSQL, checked table by table; a pg_dump into PostgreSQL. A restore stopped part-way resumes when run again. Balances must equal their ledger sums and payments agree with the ledger and credits, or the restore is refused (exit 1, the store left empty) unless --accept-discrepancies.',
  usage: 'restore --from FILE [--accept-discrepancies] [--json]',
  options: { from: { type: 'string' }, 'accept-discrepancies': { type: 'boolean' }, ...jsonOption },
  async run({ config, out }, { values }) {
    const file = required(values, 'from');
    const Backup = await loadBackup();
    let bar: ReturnType<Output['progress']> | undefined;
    let phase: string | undefined;
    try {
      const result = await Backup.restore(file, storeOf(config), {
        acceptDiscrepancies: values['accept-discrepancies'] === true,
        onProgress: values.json
          ? undefined
          : (progress) => {
              if (progress.phase !== phase) {
                bar?.stop();
                phase = progress.phase;
                bar = out.progress(progress.total, progress.phase === 'copy' ? 'restore' : 'check');
              }
              bar?.update(progress.done, progress.table);
            },
      });
      bar?.stop();
      if (values.json) out.json(result);
      else {
        out.line(`restored ${result.from} into ${result.to} in ${result.seconds.toFixed(1)} s${result.resumed ? ' (resumed)' : ''}`);
        out.line(`  holds ${held(result.rows)}`);
      }
      // Said on stderr even with --json: a restore that was let through must not pass unnoticed.
      if (result.problems.length > 0) {
        out.warn(`THE RESTORED BOOKS DO NOT ADD UP: ${result.problems.length} problem${result.problems.length === 1 ? '' : 's'}, restored anyway (--accept-discrepancies):`);
        for (const line of listed(result.problems)) out.warn(line);
      }
      return 0;
    } catch (error) {
      bar?.stop();
      return failed(out, Boolean(values.json), error, Backup);
    }
  },
};

export const secretsRotate: Command = {
  name: 'secrets rotate',
  summary:
    'Replace the secrets the service made for itself (the citation link key, a development payment secret) with new ones, for a store whose old backups still hold them: links signed before stop opening, and outstanding payment challenges are refused. Restart every serving process afterwards.',
  usage: 'secrets rotate [--json]',
  options: { ...jsonOption },
  async run({ config, services, out }, { values }) {
    const { store } = await services();
    const rotated = await store.secrets.rotate();
    // A configured secret is what signs; the kept one waits unused, and only the operator can change the configured one.
    const configured = [
      ...(config.citationLinks.secret !== undefined ? ['CITATION_LINK_SECRET'] : []),
      ...(config.payments.secret !== undefined ? ['PAYMENT_SECRET'] : []),
    ];
    for (const name of configured) out.warn(`${name} is set, so it signs, not the secret kept in the store: to rotate it, change it in the configuration`);
    if (values.json) {
      out.json({ rotated, configured });
      return 0;
    }
    if (rotated.length === 0) out.line('this store keeps no secret of its own yet: nothing to rotate (each is made on first use)');
    else {
      out.line(`rotated ${rotated.join(', ')}`);
      if (rotated.includes('citation_link_secret')) out.line('  citation links signed before no longer open: a caller asks again for a fresh link');
      if (rotated.includes('payment_secret')) out.line('  payment challenges given before are refused: a payer is challenged again');
      out.line('  restart every serving process (serve, mcp) on this store: each read the old ones when it started');
    }
    return 0;
  },
};
