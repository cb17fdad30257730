import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Postgres from '../src/store/engines/Postgres.js';
import * as Turns from '../src/store/engines/Turns.js';
import type { Engine } from '../src/store/Engine.js';
import { Busy } from '../src/store/Sql.js';
import * as Engines from './support/Engines.js';

/** A caller's turn at a pool of connections: waits in order, urgent ones first, and a bounded wait. */

describe('turns at a pool', () => {
  test('behavior: past the pool size callers wait in arrival order, and each turn given back goes to the next', async () => {
    const turns = Turns.create({ size: 2, waitMs: 1_000 });
    const order: number[] = [];
    const first = await turns.take('normal');
    const second = await turns.take('normal');
    const waiting = [3, 4, 5].map((n) => turns.take('normal').then((release) => (order.push(n), release)));
    expect(turns.waiting()).toBe(3);
    first();
    first(); // given back twice: counts once
    second();
    const [third, fourth] = await Promise.all(waiting.slice(0, 2));
    expect(order).toEqual([3, 4]);
    third!();
    (await waiting[2]!)();
    fourth!();
    expect(order).toEqual([3, 4, 5]);
    // All given back: the next take is immediate.
    await turns.take('normal');
    expect(turns.waiting()).toBe(0);
  });

  test('behavior: an urgent caller is served before every normal one waiting', async () => {
    const turns = Turns.create({ size: 1, waitMs: 1_000 });
    const held = await turns.take('normal');
    const order: string[] = [];
    const normal = turns.take('normal').then((release) => (order.push('normal'), release));
    const urgent = turns.take('urgent').then((release) => (order.push('urgent'), release));
    held();
    (await urgent)();
    (await normal)();
    expect(order).toEqual(['urgent', 'normal']);
  });

  test('error: a caller who waits longer than the bound is refused as Busy (503, Retry-After), and leaves the line', async () => {
    const turns = Turns.create({ size: 1, waitMs: 50 });
    const held = await turns.take('normal');
    const refused = await turns.take('normal').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Busy);
    expect(refused).toMatchObject({ code: 'service_unavailable', status: 503, headers: { 'Retry-After': '1' } });
    expect(turns.waiting()).toBe(0);
    held();
    (await turns.take('normal'))();
  });
});

describe('a PostgreSQL pool of two under a burst', () => {
  let database: Awaited<ReturnType<typeof Engines.fresh>>;
  let engine: Engine;
  beforeAll(async () => {
    database = await Engines.fresh('postgres', 'turns');
    engine = await Postgres.open((database.target as { url: string }).url, { max: 2 });
  });
  afterAll(async () => {
    await engine?.close();
    await database?.drop();
  });

  test('behavior: 40 slow statements and transactions at once all run (waiting, not failing), and an urgent one asked last runs before those waiting', async () => {
    const finished: string[] = [];
    const slow = Array.from({ length: 40 }, (_, i) =>
      (i % 2 === 0
        ? engine.get('SELECT pg_sleep(0.02) AS slept')
        : engine.transaction(async (tx) => {
            await tx.get('SELECT pg_sleep(0.01) AS slept');
            await tx.get('SELECT pg_sleep(0.01) AS slept');
          })
      ).then(() => finished.push(`slow ${i}`)),
    );
    await new Promise((resolve) => setTimeout(resolve, 30));
    const urgent = engine.urgent.get('SELECT 1 AS one').then(() => finished.push('urgent'));
    await Promise.all([...slow, urgent]);
    expect(finished).toHaveLength(41);
    expect(finished.indexOf('urgent')).toBeLessThan(10);
  });

  test('behavior: a statement that waits behind a transaction longer than a connection may take to open (5 s) still runs: waiting is not a lost database', async () => {
    const holding = [engine.transaction(async (tx) => tx.get('SELECT pg_sleep(5.5) AS slept')), engine.transaction(async (tx) => tx.get('SELECT pg_sleep(5.5) AS slept'))];
    await new Promise((resolve) => setTimeout(resolve, 50));
    const lost: unknown[] = [];
    const stop = engine.watch((event) => lost.push(event));
    expect(await engine.get<{ one: number }>('SELECT 1 AS one')).toEqual({ one: 1 });
    await Promise.all(holding);
    stop();
    expect(lost).toEqual([]);
  }, 20_000);
});
