/**
 * Ingest throughput: a synthetic 2,000-episode podcast feed with a WebVTT transcript per episode (and JSON chapters
 * on every fourth), served from 127.0.0.1, synced into a fresh store with and without embeddings (a local stand-in of
 * an OpenAI-compatible embeddings API). Each run is its own process, so its peak memory is its own.
 *
 *   npm run bench:ingest -- [--episodes 2000] [--cues 120]
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { projectRoot } from '../src/config/Config.js';
import * as EmbeddingServer from '../test/support/EmbeddingServer.js';
import * as FeedHost from '../test/support/FeedHost.js';

const { values } = parseArgs({ options: { episodes: { type: 'string' }, cues: { type: 'string' } } });
const episodes = Number(values.episodes ?? 2000);
const cuesPerEpisode = Number(values.cues ?? 120);

// Words for the transcripts: SciFact sentences when the shared datasets are there, else a fixed vocabulary.
const shared = process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared');
const corpus = path.join(shared, 'datasets', 'scifact', 'corpus.jsonl');
const sentences = fs.existsSync(corpus)
  ? fs.readFileSync(corpus, 'utf8').split('\n').filter(Boolean).slice(0, 3000).flatMap((l) => (JSON.parse(l) as { text: string }).text.split(/(?<=[.!?])\s+/)).filter((s) => s.length > 30)
  : Array.from({ length: 500 }, (_, i) => `Sentence ${i} about sleep, light, caffeine and the body clock, said at some length for the listener.`);
let seed = 7;
const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
const pick = () => sentences[Math.floor(random() * sentences.length)]!;
const clock = (s: number) => new Date(s * 1000).toISOString().slice(11, 23);

const host = await FeedHost.start();
const embeddings = await EmbeddingServer.start();
let transcriptBytes = 0;
const items: string[] = [];
for (let e = 0; e < episodes; e++) {
  const speakers = ['Host', `Guest ${e % 37}`];
  const cues = Array.from({ length: cuesPerEpisode }, (_, c) => `${clock(c * 15)} --> ${clock(c * 15 + 15)}\n<v ${speakers[c % 7 < 4 ? 0 : 1]}>${pick()}`);
  const vtt = `WEBVTT\n\n${cues.join('\n\n')}\n`;
  transcriptBytes += vtt.length;
  host.routes.set(`/t/${e}.vtt`, { body: vtt, type: 'text/vtt' });
  const chapters = e % 4 === 0 ? `<podcast:chapters url="/c/${e}.json" type="application/json+chapters"/>` : '';
  if (chapters) host.routes.set(`/c/${e}.json`, { body: JSON.stringify({ version: '1.2.0', chapters: [0, 600, 1200].map((t, i) => ({ startTime: t, title: `Part ${i + 1}` })) }), type: 'application/json' });
  items.push(
    `<item><title>Episode ${e}</title><guid>ep-${e}</guid><link>${host.url}/ep/${e}</link><pubDate>${new Date(Date.UTC(2020, 0, 1) + e * 86_400_000).toUTCString()}</pubDate>
<description>Notes for episode ${e}.</description><enclosure url="${host.url}/a/${e}.mp3" type="audio/mpeg" length="1"/>
<podcast:transcript url="/t/${e}.vtt" type="text/vtt"/>${chapters}</item>`,
  );
}
host.routes.set('/feed.xml', {
  body: `<?xml version="1.0"?><rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0"><channel><title>Bench</title><link>${host.url}/</link>${items.join('\n')}</channel></rss>`,
  type: 'application/rss+xml',
});

const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-ingest-'));
/** One run in a child process (asynchronously: this process serves its feed and embeddings meanwhile). */
const run = async (label: string, extra: string[]) => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'bench', 'ingest-run.ts'), '--feed', `${host.url}/feed.xml`, '--db', path.join(directory, `${label}.db`), ...extra], { encoding: 'utf8', maxBuffer: 1 << 24 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, number | string>;
};

console.log(`ingest: ${episodes} episodes, ${cuesPerEpisode} cues each, ${(transcriptBytes / 1e6).toFixed(1)} MB of WebVTT, from 127.0.0.1`);
console.log('| run | items | chunks | first sync | items/s | chunks/s | peak RSS | unchanged (304) | re-listed, all skipped |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const [label, extra] of [
  ['lexical only', []],
  ['with embeddings', ['--embeddings', embeddings.url]],
] as const) {
  const r = await run(label.replace(/\W+/g, '-'), [...extra]);
  const s = Number(r.firstSeconds);
  console.log(
    `| ${label} | ${r.items} | ${r.chunks} | ${s.toFixed(1)} s | ${(Number(r.items) / s).toFixed(0)} | ${(Number(r.chunks) / s).toFixed(0)} | ${Number(r.peakRssMb).toFixed(0)} MB | ${r.unchangedOutcome} in ${Number(r.unchangedSeconds).toFixed(2)} s | ${r.relistUnchanged} in ${Number(r.relistSeconds).toFixed(2)} s |`,
  );
}
await host.close();
await embeddings.close();
fs.rmSync(directory, { recursive: true, force: true });
