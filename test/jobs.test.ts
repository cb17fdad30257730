import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import * as Jobs from '../src/health/Jobs.js';
import * as Leases from '../src/health/Leases.js';
import * as TermModel from '../src/retrieval/terms/TermModel.js';
import * as Services from '../src/Services.js';
import type * as Stores from '../src/store/Store.js';
import * as Engines from './support/Engines.js';

/**
 * Rebuilds one process at a time: two processes on one store (each a store connection of its own here) that would
 * rebuild the term model or the vector index at once take turns, a holder that died is taken over, and a process
 * serving questions switches to a model another rebuilt without restarting.
 */
describe.each(Engines.engines)('one rebuild at a time on %s', (engine) => {
  const processes = Engines.twoProcesses(engine, 'jobs');
  let a: Stores.OpenStore;
  let b: Stores.OpenStore;
  beforeAll(() => void ({ a, b } = processes));

  test('behavior: two processes rebuilding at once take turns: the later is told who holds it, waits, and runs after', async () => {
    const events: string[] = [];
    let finishFirst!: () => void;
    const firstMayEnd = new Promise<void>((resolve) => (finishFirst = resolve));
    const first = Jobs.oneAtATime(a, 'term_model', async () => {
      events.push('first starts');
      await firstMayEnd;
      events.push('first ends');
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const told: string[] = [];
    const second = Jobs.oneAtATime(b, 'term_model', async () => void events.push('second runs'), { pollMs: 20, onWait: (lease) => told.push(Jobs.holderOf(lease)) });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(events).toEqual(['first starts']);
    expect(told).toEqual([expect.stringMatching(new RegExp(`^process ${process.pid} on .+, since \\d{4}-`))]);
    // Another job is not held up by it.
    expect(await Jobs.oneAtATime(b, 'vector_index', async () => 'built')).toBe('built');
    finishFirst();
    await Promise.all([first, second]);
    expect(events).toEqual(['first starts', 'first ends', 'second runs']);
  });

  test('behavior: claims made on the same tick by two processes never both run (the first claim of a job makes its row)', async () => {
    // SQLite's two connections in one process cannot wait on each other: there, one connection takes both claims.
    const other = engine === 'postgres' ? b : a;
    for (let round = 0; round < 5; round++) {
      const name = round % 2 === 0 ? 'vector_index' : 'term_model';
      let running = 0;
      let most = 0;
      const work = async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 30));
        running -= 1;
      };
      await Promise.all([Jobs.oneAtATime(a, name, work, { pollMs: 10 }), Jobs.oneAtATime(other, name, work, { pollMs: 10 })]);
      expect(most).toBe(1);
    }
  });

  test('behavior: with skipIfHeld a held job is left to its holder at once; a lease this process left under a finished holder is free to it', async () => {
    let release!: () => void;
    const held = Jobs.oneAtATime(a, 'term_model', () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await Jobs.oneAtATime(b, 'term_model', async () => 'ran', { skipIfHeld: true })).toBeUndefined();
    release();
    await held;
    // A release the database missed: the row still names this process, under a holder that no longer runs.
    await a.jobs.claim({ name: 'term_model', holder: 'job_finished', host: Leases.processHost, pid: process.pid, now: Date.now(), expired: () => true });
    expect(await Jobs.oneAtATime(a, 'term_model', async () => 'ran', { skipIfHeld: true })).toBe('ran');
  });

  test('behavior: the lease is ended when the work fails, and the next one runs at once', async () => {
    await expect(Jobs.oneAtATime(a, 'term_model', async () => Promise.reject(new Error('out of memory')))).rejects.toThrow('out of memory');
    const told: unknown[] = [];
    expect(await Jobs.oneAtATime(b, 'term_model', async () => 'ran', { onWait: (lease) => told.push(lease) })).toBe('ran');
    expect(told).toEqual([]);
  });

  test('behavior: a holder whose process here is gone is taken over at once; one elsewhere once silent for the stale time', async () => {
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => gone.on('exit', resolve));
    const now = Date.now();
    const leave = (holder: string, host: string, pid: number, heartbeatAt: number) =>
      a.jobs.claim({ name: 'term_model', holder, host, pid, now: heartbeatAt, expired: () => true });
    await leave('job_dead', Leases.processHost, gone.pid!, now);
    const told: unknown[] = [];
    expect(await Jobs.oneAtATime(b, 'term_model', async () => 'resumed', { onWait: (lease) => told.push(lease) })).toBe('resumed');
    expect(told).toEqual([]);

    await leave('job_elsewhere', 'another-machine', 4242, now);
    const waiting = Jobs.oneAtATime(b, 'term_model', async () => 'taken over', { pollMs: 20, staleMs: 300, onWait: (lease) => told.push(lease.holder) });
    expect(await waiting).toBe('taken over');
    expect(told).toEqual(['job_elsewhere']);
  });

  test('behavior: a process answering questions switches to a term model another process rebuilt, without restarting', async () => {
    const env = { ENVIRONMENT: 'test', LOG_LEVEL: 'silent', ...processes.place.env };
    const serving = await Services.create(Config.load(env));
    try {
      await Demo.load({ store: a }, { chunkTargetTokens: 200 });
      const before = await serving.termModel();
      expect(before).toBeDefined();
      expect(await serving.termModel()).toBe(before);
      await Jobs.oneAtATime(a, 'term_model', () => TermModel.build(a, { seed: 11 }));
      const after = await serving.termModel();
      expect(after).not.toBe(before);
      expect(after!.info.builtAt).toBeGreaterThan(before!.info.builtAt);
    } finally {
      await serving.close();
    }
  });
});
