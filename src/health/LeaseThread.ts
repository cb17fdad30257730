import { parentPort, workerData } from 'node:worker_threads';
import * as Stores from '../store/Store.js';
import * as LeaseKeeper from './LeaseKeeper.js';

/**
 * A serving process's lease, renewed from a thread of its own on a database connection of its own: a burst that
 * saturates the serving thread's event loop, or the requests queued for its connections, cannot hold a renewal back.
 * The serving thread stamps `beat` every second; silent for `stallMs`, it is stuck, and the lease is left to run out.
 * Started by Instance; answers 'stop' by stopping, closing its connection and ending.
 */
export type Data = { target: Stores.Target; id: string; name: string; everyMs: number; stallMs: number; beat: SharedArrayBuffer };

const data = workerData as Data;
const port = parentPort!;
const beat = new BigInt64Array(data.beat);
let store: Promise<Stores.OpenStore> | undefined;
const connected = (): Promise<Stores.OpenStore> => {
  // A connection that could not be made is tried again at the next renewal.
  store ??= Stores.attach(data.target).catch((error: unknown) => {
    store = undefined;
    throw error;
  });
  return store;
};

const keeper = LeaseKeeper.keep({
  store: connected,
  id: data.id,
  name: data.name,
  everyMs: data.everyMs,
  now: Date.now,
  alive: () => {
    const silent = Date.now() - Number(Atomics.load(beat, 0));
    return silent > data.stallMs ? silent : undefined;
  },
  tell: (report) => port.postMessage(report),
});

port.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  void (async () => {
    await keeper.stop();
    await (await store?.catch(() => undefined))?.close().catch(() => undefined);
    port.close();
  })();
});
