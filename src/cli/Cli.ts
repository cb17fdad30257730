import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import * as Config from '../config/Config.js';
import { ServiceError } from '../errors/ServiceError.js';
import { lazy } from '../errors/Lazy.js';
import type * as Services from '../Services.js';
import { Unavailable } from '../store/Sql.js';
import { type Command, type CommandContext, UsageError } from './Command.js';
import * as Accounts from './commands/Accounts.js';
import * as BackupCommands from './commands/Backup.js';
import * as Stats from './commands/Stats.js';
import * as Content from './commands/Content.js';
import * as Eval from './commands/Eval.js';
import * as Pay from './commands/Pay.js';
import * as Reindex from './commands/Reindex.js';
import * as Profiles from './commands/Profiles.js';
import * as Serve from './commands/Serve.js';
import * as StoreCommands from './commands/Store.js';
import * as SyncCommands from './commands/Sync.js';
import * as Output from './Output.js';

/**
 * Every command, in the order `help` lists them. The command modules are light: each loads what it runs on (the
 * services, a transport, the evaluation, the sandbox) when it runs, so `--help` or `keys create` never pays for a server.
 */
export const commands: Command[] = [
  Serve.serve,
  Serve.mcp,
  Content.demoLoad,
  Profiles.profilesCreate,
  Profiles.profilesUpdate,
  Profiles.profilesList,
  Profiles.profilesAlias,
  Profiles.membersAdd,
  Profiles.membersRemove,
  Profiles.accessGrant,
  Profiles.accessRevoke,
  Profiles.collectionsCreate,
  Profiles.collectionsList,
  Content.channelsCreate,
  Content.channelsUpdate,
  Content.channelsList,
  Content.upload,
  SyncCommands.sync,
  SyncCommands.importExport,
  Content.itemsList,
  Accounts.accountsCreate,
  Accounts.accountsList,
  ...Accounts.keyCommands,
  ...Accounts.tokenCommands,
  Accounts.creditsGrant,
  Accounts.ledger,
  Stats.stats,
  Pay.payments,
  Pay.ask,
  Pay.sandbox,
  Reindex.reindex,
  Eval.evaluate,
  Eval.fit,
  StoreCommands.copy,
  BackupCommands.backup,
  BackupCommands.restore,
  BackupCommands.secretsRotate,
];

/** The services (store, search, rails, model), loaded by the first command that opens them. */
const servicesModule = lazy('The service layer', () => import('../Services.js'));

function help(out: Output.Output): void {
  out.line('usage: profile-edge <command> [options]\n');
  const width = Math.max(...commands.map((c) => c.name.length));
  for (const c of commands) out.line(`  ${c.name.padEnd(width)}  ${c.summary}`);
  out.line('\nprofile-edge <command> --help shows a command’s options. Configuration comes from the environment (see .env.example).');
}

/** Finds the command named by the first one or two words. */
function match(argv: string[]): { command: Command; rest: string[] } | undefined {
  const two = commands.find((c) => c.name === `${argv[0]} ${argv[1]}`);
  if (two) return { command: two, rest: argv.slice(2) };
  const one = commands.find((c) => c.name === argv[0]);
  return one && { command: one, rest: argv.slice(1) };
}

/** Runs the CLI; returns the process exit code (0 ok, 1 failed, 2 usage error). */
export async function main(argv: string[], out: Output.Output = Output.create()): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    help(out);
    return argv.length === 0 ? 2 : 0;
  }
  const found = match(argv);
  if (!found) {
    const group = commands.filter((c) => c.name.startsWith(`${argv[0]} `));
    out.error(group.length > 0 ? `"${argv.join(' ')}" needs one of: ${group.map((c) => c.name).join(', ')}` : `unknown command "${argv[0]}"; run profile-edge help`);
    return 2;
  }
  const { command, rest } = found;
  if (rest.includes('--help') || rest.includes('-h')) {
    out.line(`usage: profile-edge ${command.usage}\n\n${command.summary}`);
    return 0;
  }

  let services: Promise<Services.Services> | undefined;
  try {
    if (fs.existsSync('.env')) process.loadEnvFile('.env');
    const config = Config.load();
    const { values, positionals } = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
    const { min, max } = command.positionals ?? { min: 0, max: 0 };
    if (positionals.length < min || positionals.length > max) {
      throw new UsageError(positionals.length < min ? 'missing arguments' : `unexpected argument "${positionals[max]}"`);
    }
    const context: CommandContext = { config, out, services: () => (services ??= servicesModule().then((S) => S.create(config))) };
    return (await command.run(context, { values, positionals })) ?? 0;
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      out.error(`${(error as Error).message}\nusage: profile-edge ${command.usage}`);
      return 2;
    }
    if (error instanceof Unavailable) {
      out.error(error.detail);
      return 1;
    }
    if (error instanceof Config.ConfigError || error instanceof ServiceError) {
      out.error(error.message);
      return 1;
    }
    if (error instanceof z.ZodError) {
      out.error(error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n'));
      return 1;
    }
    out.error((error as Error).stack ?? String(error));
    return 1;
  } finally {
    await services?.then((s) => s.close()).catch(() => undefined);
  }
}
