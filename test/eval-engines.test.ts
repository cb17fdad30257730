import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as Cli from './support/Cli.js';
import * as Engines from './support/Engines.js';

/** `eval` builds its temporary store beside the operator's database, on either engine, and scores the same. */
describe('eval on both engines', () => {
  let directory: string;
  let dataset: string;

  beforeAll(() => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-eval-engines-'));
    dataset = path.join(directory, 'tiny-beir');
    fs.mkdirSync(path.join(dataset, 'qrels'), { recursive: true });
    const docs = [
      ['d1', 'Levain temperature', 'A young levain ferments best between 24 and 27 degrees Celsius.'],
      ['d2', 'Bike lanes', 'Protected bike lanes need a buffer of at least half a metre from parked cars.'],
      ['d3', 'Heat pumps', 'Weather compensation lowers the flow temperature on mild days.'],
      ['d4', 'Levain feeding', 'Feed the levain twice a day at room temperature, discarding half each time.'],
    ];
    fs.writeFileSync(path.join(dataset, 'corpus.jsonl'), docs.map(([_id, title, text]) => JSON.stringify({ _id, title, text })).join('\n'));
    const queries = [
      ['q1', 'What temperature suits a levain?'],
      ['q2', 'How wide a buffer should bike lanes have from parked cars?'],
      ['q3', 'How often should a levain be fed?'],
    ];
    fs.writeFileSync(path.join(dataset, 'queries.jsonl'), queries.map(([_id, text]) => JSON.stringify({ _id, text })).join('\n'));
    fs.writeFileSync(path.join(dataset, 'qrels', 'test.tsv'), 'query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td4\t1\n');
  });
  afterAll(() => fs.rmSync(directory, { recursive: true, force: true }));

  const temporaryDatabases = async () => {
    const client = new pg.Client({ connectionString: Engines.adminUrl });
    await client.connect();
    try {
      return (await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'profile_edge_tmp_%'")).rows.map((r) => r.datname);
    } finally {
      await client.end();
    }
  };

  test('behavior: the figures are the same on SQLite and PostgreSQL, and the temporary database is dropped after', async () => {
    const scores: Record<string, unknown> = {};
    const before = await temporaryDatabases();
    for (const engine of Engines.engines) {
      const target = await Engines.fresh(engine);
      try {
        const run = await Cli.run({ ...target.env, LOG_LEVEL: 'silent' }, 'eval', '--dataset', dataset, '--json');
        expect(run.code, run.stderr).toBe(0);
        const { ndcg10, recall10, recall100, mrr10, queries, documents, chunks } = JSON.parse(run.stdout) as Record<string, number>;
        scores[engine] = { ndcg10, recall10, recall100, mrr10, queries, documents, chunks };
      } finally {
        await target.drop();
      }
    }
    expect(scores.sqlite).toMatchObject({ queries: 3, documents: 4, recall10: 1 });
    expect(scores.postgres).toEqual(scores.sqlite);
    expect(await temporaryDatabases()).toEqual(before);
  }, 60_000);
});
