import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Demo from '../src/demo/Demo.js';
import * as Jobs from '../src/health/Jobs.js';
import * as Leases from '../src/health/Leases.js';
import * as TermModel from '../src/retrieval/TermModel.js';
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
