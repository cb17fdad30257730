import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { main } from '../src/cli/Cli.js';
import { projectRoot } from '../src/config/Config.js';
import * as Output from '../src/cli/Output.js';
import { withoutPassword } from '../src/cli/commands/Serve.js';
import * as Stores from '../src/store/Store.js';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';
import * as Peek from './support/Peek.js';

let directory: string;
/** The store the in-process CLI runs against (DATABASE_PATH or DATABASE_URL in process.env). */
let place: Awaited<ReturnType<typeof Engines.fresh>>;
/** Every store the file made on this run's engine, removed after. */
const places: Awaited<ReturnType<typeof Engines.fresh>>[] = [];

/** A fresh, empty store on this run's engine, removed after the file. */
async function fresh(prefix: string): Promise<Awaited<ReturnType<typeof Engines.fresh>>> {
  const made = await Engines.fresh(Engines.current, prefix);
  places.push(made);
  return made;
}

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-cli-'));
  place = await fresh('cli');
  Object.assign(process.env, place.env);
  process.env.LOG_LEVEL = 'silent';
  process.chdir(directory);
});

afterAll(async () => {
  for (const made of places) await made.drop();
  fs.rmSync(directory, { recursive: true, force: true });
});

/** Runs the CLI in-process and captures what it prints. */
async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) => new Writable({ write: (chunk, _enc, done) => (append(String(chunk)), done()) });
  const out = Output.create({ stdout: sink((s) => (stdout += s)), stderr: sink((s) => (stderr += s)) });
  const code = await main(argv, out);
  return { code, stdout, stderr };
}

describe('profile-edge CLI', () => {
  test('behavior: help lists every command; an unknown command is a usage error', async () => {
    const help = await cli('help');
    expect(help.code).toBe(0);
    for (const name of ['serve', 'mcp', 'profiles create', 'keys create', 'upload', 'credits grant', 'ledger']) expect(help.stdout).toContain(name);
    expect((await cli('frobnicate')).code).toBe(2);
    const group = await cli('keys');
    expect(group.code).toBe(2);
    expect(group.stderr).toContain('keys create');
  });

  test('behavior: the summaries made for each kind of credential read as English', async () => {
    const help = (await cli('help')).stdout;
    for (const summary of ['List API keys (never their secrets).', 'List bearer tokens (never their secrets).', 'Revoke an API key;', 'Create a bearer token for an account']) expect(help).toContain(summary);
    // An article before a plural ("List an API keys") is the mistake a generated summary makes.
    expect(help).not.toMatch(/\b(?:a|an) (?:API key|bearer token)s\b/);
    expect((await cli('tokens', 'list', '--help')).stdout).toContain('List bearer tokens (never their secrets).');
  });

  test('behavior: a warning is said as one, not as an error', async () => {
    let stderr = '';
    const sink = new Writable({ write: (chunk, _enc, done) => ((stderr += String(chunk)), done()) });
    const out = Output.create({ stdout: sink, stderr: sink });
    out.warn('the feed declares no charset');
    out.error('no such channel');
    expect(stderr).toBe('warning: the feed declares no charset\nerror: no such channel\n');
  });

  test('behavior: an operator sets up a profile, channel, upload, account, key and credits', async () => {
    expect((await cli('accounts', 'create', 'ada', '--email', 'ada@example.com')).code).toBe(0);
    expect((await cli('accounts', 'create', 'kai')).code).toBe(0);
    expect((await cli('profiles', 'create', 'ada-notes', '--name', 'Ada Notes', '--visibility', 'private', '--owner', 'ada')).code).toBe(0);
    expect((await cli('members', 'add', 'ada-notes', 'kai')).code).toBe(0);
    const channel = await cli('channels', 'create', '--profile', 'ada-notes', '--kind', 'user_upload', '--label', 'Uploads', '--access', 'private', '--rate', '2.5', '--id', 'ch_ada_uploads');
    expect(channel.code).toBe(0);

    const files = ['one.md', 'two.txt'].map((name, i) => {
      const file = path.join(directory, name);
      fs.writeFileSync(file, i === 0 ? '# One\n\nAnalytical engines weave algebraic patterns.' : 'Looms weave flowers and leaves.');
      return file;
    });
    const upload = await cli('upload', '--channel', 'ch_ada_uploads', ...files);
    expect(upload.code).toBe(0);
    expect(upload.stderr).toContain('upload ch_ada_uploads 2/2');
    expect(upload.stdout).toContain('created');
    expect((await cli('upload', '--channel', 'ch_ada_uploads', ...files)).stdout).toContain('unchanged');

    const key = await cli('keys', 'create', '--account', 'ada', '--label', 'laptop');
    expect(key.code).toBe(0);
    const token = /pek_[0-9a-f]{16}_[A-Za-z0-9_-]{43}/.exec(key.stdout)![0];
    const listed = await cli('keys', 'list', '--account', 'ada');
    expect(listed.stdout).toContain('laptop');
    expect(listed.stdout).not.toContain(token.slice(21));
    // Accounts by the names people gave them, not their ids.
    const row = (JSON.parse((await cli('keys', 'list', '--account', 'ada', '--json')).stdout) as { accountId: string; accountName: string }[])[0]!;
    expect(row.accountName).toBe('ada');
    expect(listed.stdout).toMatch(/\bada\b/);
    expect(listed.stdout).not.toContain(row.accountId);

    expect((await cli('credits', 'grant', 'ada', '--unlocks', '5', '--credits', '100', '--memo', 'welcome')).stdout).toContain('5 unlocks, 100 credits');
    const ledger = await cli('ledger', '--account', 'ada', '--json');
    expect(JSON.parse(ledger.stdout)).toMatchObject([{ kind: 'grant', unlocksDelta: 5, creditsDelta: 100, memo: 'welcome', accountName: 'ada' }]);
    const ledgerTable = (await cli('ledger', '--account', 'ada')).stdout;
    expect(ledgerTable).toMatch(/\bada\b/);
    expect(ledgerTable).not.toContain(row.accountId);

    const channels = JSON.parse((await cli('channels', 'list', '--profile', 'ada-notes', '--json')).stdout);
    expect(channels).toMatchObject([{ id: 'ch_ada_uploads', items: 2, chunks: 2, accessLevel: 'private', ratePerMillionTokens: 2.5 }]);
    const keyId = token.split('_')[1]!;
    expect((await cli('keys', 'revoke', keyId)).code).toBe(0);
    expect(JSON.parse((await cli('keys', 'list', '--json')).stdout)[0].revokedAt).not.toBeNull();
  });

  test('behavior: an upload read with a guessed charset warns, and still succeeds', async () => {
    const file = path.join(directory, 'guessed.txt');
    fs.writeFileSync(file, Buffer.from([0x41, 0xe9, 0x42]));
    const upload = await cli('upload', '--channel', 'ch_ada_uploads', file);
    expect(upload.code, upload.stderr).toBe(0);
    expect(upload.stderr).toMatch(/^warning: guessed\.txt: no charset declared.*windows-1252/m);
    expect(upload.stderr).not.toContain('error:');
  });

  test.each([
    [['profiles', 'create', 'Bad Slug', '--name', 'X'], 1, 'not a valid handle'],
    [['profiles', 'create', 'okay'], 2, '--name is required'],
    [['profiles', 'create', 'listed', '--name', 'X', '--visibility', 'unlisted', '--directory'], 2, 'only public profiles'],
    [['channels', 'create', '--profile', 'ada-notes', '--kind', 'fax', '--label', 'X'], 2, '--kind must be one of'],
    [['channels', 'create', '--profile', 'ada-notes', '--kind', 'rss', '--label', 'X', '--rate=-1'], 2, '--rate must be a number >= 0'],
    [['channels', 'update', 'ch_nope', '--status', 'paused'], 1, 'no channel "ch_nope"'],
    [['credits', 'grant', 'ada'], 2, 'give --unlocks and/or --credits'],
    [['credits', 'grant', 'ada', '--unlocks=-1000'], 1, 'cannot take that much'],
    [['credits', 'grant', 'nobody', '--unlocks', '1'], 1, 'no account "nobody"'],
    [['keys', 'create'], 2, '--account is required'],
    [['upload', '--channel', 'ch_ada_uploads', 'deck.pdfx'], 1, 'accepted types'],
    [['profiles', 'list', '--colour'], 2, 'Unknown option'],
    [['accounts', 'create'], 2, 'missing arguments'],
    [['credits', 'grant', 'ada', '--unlocks', '9007199254740993'], 2, '--unlocks must be an integer'],
    [['credits', 'grant', 'ada', '--credits=-5000'], 1, 'cannot take that much: ada has'],
    [['serve', '--port', '99999'], 2, '--port must be an integer >= 0 and <= 65535'],
  ])('error: %j exits %i with a clear message and changes nothing', async (argv, code, message) => {
    const peek = await Peek.open(place.env);
    try {
      const count = () => peek.value('SELECT (SELECT count(*) FROM profiles) + (SELECT count(*) FROM channels) + (SELECT count(*) FROM ledger) + (SELECT sum(unlock_balance) FROM accounts)');
      const before = await count();
      const result = await cli(...argv);
      expect(result.code).toBe(code);
      expect(result.stderr).toContain(message);
      expect(await count()).toBe(before);
    } finally {
      await peek.close();
    }
  });

  test('behavior: eval scores a BEIR dataset through ingestion and retrieval', async () => {
    const dataset = path.join(directory, 'tiny-beir');
    fs.mkdirSync(path.join(dataset, 'qrels'), { recursive: true });
    const docs = [
      ['d1', 'Levain temperature', 'A young levain ferments best between 24 and 27 degrees Celsius.'],
      ['d2', 'Bike lanes', 'Protected bike lanes need a buffer of at least half a metre from parked cars.'],
      ['d3', 'Heat pumps', 'Weather compensation lowers the flow temperature on mild days.'],
    ];
    fs.writeFileSync(path.join(dataset, 'corpus.jsonl'), docs.map(([_id, title, text]) => JSON.stringify({ _id, title, text })).join('\n'));
    fs.writeFileSync(path.join(dataset, 'queries.jsonl'), [JSON.stringify({ _id: 'q1', text: 'What temperature suits a levain?' }), JSON.stringify({ _id: 'q2', text: 'How wide a buffer should bike lanes have from parked cars?' })].join('\n'));
    fs.writeFileSync(path.join(dataset, 'qrels', 'test.tsv'), 'query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n');
    const run = await cli('eval', '--dataset', dataset, '--json');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ queries: 2, documents: 3, ndcg10: 1, recall10: 1, mrr10: 1 });

    // Answer quality on the same claims: rationale sentences per document, split as the dataset gives them.
    fs.writeFileSync(path.join(dataset, 'corpus.sentences.jsonl'), docs.map(([_id, , text]) => JSON.stringify({ _id, sentences: [text] })).join('\n'));
    const evidence = path.join(dataset, 'evidence.jsonl');
    fs.writeFileSync(evidence, [JSON.stringify({ query_id: 'q1', doc_id: 'd1', sentences: [0] }), JSON.stringify({ query_id: 'q2', doc_id: 'd2', sentences: [0] })].join('\n'));
    // Beside the yardstick of judged expert questions: a small one here, one question answered and one refused.
    const yardstick = path.join(directory, 'tiny-yardstick');
    fs.mkdirSync(path.join(yardstick, 'questions'), { recursive: true });
    fs.mkdirSync(path.join(yardstick, 'kettle-hour'));
    fs.writeFileSync(path.join(yardstick, 'kettle-hour', 'descaling.md'), '# Descaling\n\nDescale a kettle with citric acid once a month if you live in a hard-water area. Vinegar works too, but it leaves a smell.\n');
    const manifest = {
      accounts: [{ name: 'kettle' }],
      profiles: [
        {
          slug: 'kettle-hour', name: 'Kettle Hour', description: 'Kettles.', visibility: 'public', directory: true, owner: 'kettle', members: [],
          channels: [{ id: 'ch_kettle_blog', kind: 'rss', label: 'Blog', accessLevel: 'public', ratePerMillionTokens: 1, status: 'live', items: [{ externalId: 'descaling', file: 'kettle-hour/descaling.md', title: 'Descaling', publishedAt: '2025-01-01' }] }],
        },
      ],
      collections: [],
    };
    fs.writeFileSync(path.join(yardstick, 'manifest.json'), JSON.stringify(manifest));
    const judged = [
      { id: 'descale', question: 'How often should I descale a kettle in a hard-water area?', kind: 'figure', scope: { kind: 'profile', slug: 'kettle-hour' }, answerable: true, facts: [['once a month']], passages: [{ file: 'kettle-hour/descaling.md', quote: 'Descale a kettle with citric acid once a month' }] },
      { id: 'toaster', question: 'Which toaster brand does Kettle Hour recommend for bagels?', kind: 'unanswerable', scope: { kind: 'profile', slug: 'kettle-hour' }, answerable: false },
    ];
    fs.writeFileSync(path.join(yardstick, 'questions', 'kettle.json'), JSON.stringify(judged));
    const answers = await cli('eval', '--answers', '--yardstick', yardstick, '--dataset', dataset, '--evidence', evidence, '--json');
    expect(answers.code, answers.stderr).toBe(0);
    const both = JSON.parse(answers.stdout);
    expect(both.yardstick).toMatchObject({ questions: 2, answerable: { asked: 1, correct: 1, cited: 1, right: 1 }, unanswerable: { asked: 1, refused: 1 } });
    const scored = both.scifact;
    expect(scored).toMatchObject({ claims: 2, answerRecall: 1, citationPrecision: 1, rationaleOverlap: 1 });
    expect(scored.abstention).toEqual({ removedEvidence: { asked: 2, rate: 1 }, offTopic: { asked: 20, rate: 1 } });
    expect(scored.confidence.high.answers + scored.confidence.medium.answers + scored.confidence.low.answers).toBe(2);
    const noEvidence = await cli('eval', '--answers', '--dataset', dataset);
    expect(noEvidence).toMatchObject({ code: 2, stderr: expect.stringContaining('--answers needs --evidence FILE') });
    // Printed side by side for people.
    const table = await cli('eval', '--answers', '--yardstick', yardstick, '--dataset', dataset, '--evidence', evidence);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/yardstick\s+held out\s+the rest\s+SciFact \(train\)/);
    expect(table.stdout).toMatch(/answered correctly, right passage cited\s+100\.0% of 1/);
    expect(table.stdout).toMatch(/unanswerable refused before payment\s+100\.0% of 1/);

    fs.appendFileSync(path.join(dataset, 'corpus.jsonl'), '\n{"_id": "d4", "title": ');
    const bad = await cli('eval', '--dataset', dataset);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('corpus.jsonl line 4 is not JSON');
    const missing = await cli('eval', '--dataset', path.join(directory, 'nowhere'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not a BEIR dataset');
  });

  test('error: invalid configuration is reported before anything runs', async () => {
    process.env.PORT = 'eighty';
    try {
      const result = await cli('profiles', 'list');
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('PORT');
    } finally {
      delete process.env.PORT;
    }
  });
});

describe('keys create with a starting balance', () => {
  test('behavior: --create makes the account, grants the balance and prints the key, in one step', async () => {
    const made = await cli('keys', 'create', '--account', 'quick-buyer', '--create', '--credits', '1000', '--unlocks', '10', '--json');
    expect(made.code).toBe(0);
    const key = JSON.parse(made.stdout) as { token: string; account: { name: string; unlockBalance: number; creditBalance: number } };
    expect(key.token).toMatch(/^pek_[0-9a-f]{16}_/);
    expect(key.account).toEqual({ name: 'quick-buyer', unlockBalance: 10, creditBalance: 1000 });
    // Again for the same account: another key, more balance, and a ledger row for each grant.
    expect((await cli('keys', 'create', '--account', 'quick-buyer', '--create', '--credits', '5')).stdout).toContain('(10 unlocks, 1005 credits)');
    const ledger = JSON.parse((await cli('ledger', '--account', 'quick-buyer', '--json')).stdout) as { kind: string }[];
    expect(ledger.filter((e) => e.kind === 'grant')).toHaveLength(2);
  });

  test('error: without --create an unknown account is refused and nothing is written', async () => {
    const refused = await cli('keys', 'create', '--account', 'typo-buyer', '--credits', '1000');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('no account "typo-buyer" (add --create to make it)');
    expect(JSON.parse((await cli('accounts', 'list', '--json')).stdout).map((a: { name: string }) => a.name)).not.toContain('typo-buyer');
  });

  test('error: a negative starting balance is a usage error', async () => {
    const refused = await cli('keys', 'create', '--account', 'neg-buyer', '--create', '--credits', '-5');
    expect(refused.code).toBe(2);
    expect(JSON.parse((await cli('accounts', 'list', '--json')).stdout).map((a: { name: string }) => a.name)).not.toContain('neg-buyer');
  });
});

describe('serve', () => {
  test('behavior: a database URL the banner prints never shows a password, in whichever form it was given', () => {
    expect(withoutPassword('postgres://edge:S3cret@db.example:5432/edge')).toBe('postgres://edge:<password>@db.example:5432/edge');
    expect(withoutPassword('postgres://edge@db.example/edge?password=S3cret&sslmode=require')).toBe('postgres://edge@db.example/edge?password=<password>&sslmode=require');
    expect(withoutPassword('postgresql://db.example/edge?sslpassword=S3cret')).not.toContain('S3cret');
    expect(withoutPassword('postgres://edge@db.example/edge')).toBe('postgres://edge@db.example/edge');
  });

  test('behavior: the banner shows the database, the URLs, and a key command that works as printed', async () => {
    const { spawn, execFileSync } = await import('node:child_process');
    const { projectRoot } = await import('../src/config/Config.js');
    const { target, env: database } = await fresh('banner');
    const bin = path.join(projectRoot, 'bin', 'profile-edge.mjs');
    const env = { PATH: process.env.PATH ?? '', ...database, PORT: '0', DEMO_DATA: 'false', SYNC_SCHEDULE: 'false', LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, [bin, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const banner = await new Promise<string>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('--create')) resolve(text);
        });
        child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${text}`)));
      });
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)![1]!;
      // A file by its path; a PostgreSQL database by its server and name.
      const shown = 'path' in target ? target.path : `PostgreSQL at ${new URL(target.url).host}${new URL(target.url).pathname}`;
      expect(banner).toContain(`database  ${shown}`);
      expect(banner).toContain(`${url}/mcp`);
      expect(banner).toContain(`${url}/api/profiles`);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      // The printed command, run as printed (npx profile-edge is this project's bin).
      // It names the server's store itself (DATABASE_URL on PostgreSQL): it runs with nothing else in its environment.
      const variable = 'path' in target ? 'DATABASE_PATH' : 'DATABASE_URL';
      const command = new RegExp(`\\n\\s+(${variable}=.*npx profile-edge keys create .*)\\n`).exec(banner)![1]!;
      const output = execFileSync('bash', ['-c', command.replace('npx profile-edge', `node ${JSON.stringify(bin)}`)], { env: { PATH: env.PATH, LOG_LEVEL: 'silent' }, encoding: 'utf8' });
      const key = /^(pek_\S+)$/m.exec(output)![1]!;
      const quote = await fetch(`${url}/api/ask/quote`, { method: 'POST', headers: { 'service-api-key': key } });
      expect(await quote.json()).toMatchObject({ rail: 'api_key' });
      expect(output).toContain('1000 credits');
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('serve and reconciliation', () => {
  test('behavior: a charge a killed server left unanswered is reversed when serve starts again', async () => {
    const { spawn } = await import('node:child_process');
    const { projectRoot } = await import('../src/config/Config.js');
    const { env: database } = await fresh('crashed');
    const bin = path.join(projectRoot, 'bin', 'profile-edge.mjs');
    const env = { PATH: process.env.PATH ?? '', ...database, PORT: '0', DEMO_DATA: 'false', SYNC_SCHEDULE: 'false', LOG_LEVEL: 'warn' };
    // The state a kill -9 between the debit and the answer leaves: a charge 11 minutes old with nothing after it.
    const made = await Cli.run(database, 'keys', 'create', '--account', 'crashed-buyer', '--create', '--credits', '30', '--json');
    expect(made.code).toBe(0);
    const peek = await Peek.open(database);
    let account: { id: string };
    try {
      account = (await peek.get<{ id: string }>("SELECT id FROM accounts WHERE name = 'crashed-buyer'"))!;
      await peek.run("UPDATE meta SET value = '0' WHERE key = 'answer_markers_since'");
      await peek.run('UPDATE accounts SET credit_balance = credit_balance - 10 WHERE id = ?', account.id);
      await peek.run("INSERT INTO ledger (created_at, account_id, kind, credits_delta, query_id, memo) VALUES (?, ?, 'query_charge', -10, 'q_killed', 'killed')", Date.now() - 11 * 60_000, account.id);
    } finally {
      await peek.close();
    }
    const child = spawn(process.execPath, [bin, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('listening on') && resolve());
        child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
      });
      const after = await Peek.open(database);
      const rows = await after.all("SELECT kind, credits_delta AS credits FROM ledger WHERE query_id = 'q_killed' ORDER BY id");
      const balance = await after.value('SELECT credit_balance AS b FROM accounts WHERE id = ?', account.id);
      await after.close();
      expect(rows).toEqual([
        { kind: 'query_charge', credits: -10 },
        { kind: 'query_reversal', credits: 10 },
      ]);
      expect(balance).toBe(30);
      expect(stderr).toContain('reversed charges left unanswered by a stopped query');
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('a closed pipe', () => {
  let many: Promise<Peek.Place> | undefined;

  /** The CLI as a shell runs it, over a database with more channels than a pipe holds (64 KiB on Linux). */
  async function setUp() {
    many ??= (async () => {
      const { target, env } = await fresh('pipe');
      const { store } = await Stores.open(target);
      try {
        const profileId = (await store.profiles.create({ slug: 'many', name: 'Many channels', visibility: 'public' })).id;
        await store.transaction(async (tx) => {
          for (let i = 0; i < 3000; i++) await tx.channels.create({ profileId, kind: 'rss', label: `Channel ${i} with a label long enough to fill a pipe quickly`, accessLevel: 'public', ratePerMillionTokens: 1 });
        });
      } finally {
        await store.close();
      }
      return env;
    })();
    const env = { PATH: process.env.PATH ?? '', ...(await many), DEMO_DATA: 'false', SYNC_SCHEDULE: 'false', LOG_LEVEL: 'warn' };
    return { bin: path.join(projectRoot, 'bin', 'profile-edge.mjs'), env };
  }

  test('behavior: "channels list | head -1" prints the first line; the CLI ends quietly with 141, as Unix tools do', async () => {
    const { bin, env } = await setUp();
    // stdin not a socket: bash would take itself for a remote shell and read ~/.bashrc.
    const run = spawnSync('bash', ['-c', `"${process.execPath}" "${bin}" channels list | head -1; echo "status \${PIPESTATUS[0]}"`], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^id +profile +kind +label[^\n]*\nstatus 141\n$/);
  });

  test('behavior: a reader that closes stdout after its first chunk gets no stack trace on stderr', async () => {
    const { bin, env } = await setUp();
    const child = spawn(process.execPath, [bin, 'channels', 'list', '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = once(child, 'close');
    const [first] = (await once(child.stdout, 'data')) as [Buffer];
    child.stdout.destroy();
    const [code, signal] = await closed;
    expect(first.toString()).toMatch(/^\[/);
    expect(stderr).toBe('');
    expect({ code, signal }).toEqual({ code: 141, signal: null });
  });

  test('behavior: a closed stderr ends a command quietly too', async () => {
    const { bin, env } = await setUp();
    // An unknown command writes only its error, to stderr, whose reader is gone before the CLI starts.
    const child = spawn(process.execPath, [bin, 'frobnicate'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stderr.destroy();
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const [code] = await once(child, 'close');
    expect(stdout).toBe('');
    // 2 (usage error) would mean the error was written; a crash on EPIPE exits 1.
    expect(code).toBe(141);
  });
});

