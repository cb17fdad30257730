import type { Worker } from 'node:worker_threads';
import * as Threads from '../../health/Threads.js';
import * as MaxScore from './MaxScore.js';
import type { ListView } from './Postings.js';

/**
 * One question's first stage over more than one core: this thread and the search threads each claim the next range
 * of the documents in turn until none is left (a counter in shared memory), over the same index in shared memory (a
 * snapshot's body and the arrays that grow are SharedArrayBuffers; what is not shared is copied into the message, a
 * few kilobytes a list). Claiming as they go shares the work by how fast each thread is, not by an even split. They
 * share one threshold (`MaxScore.SharedThreshold`), so each prunes by the best any has found. The merged finalists are
 * the exact top k, as one search would find them.
 *
 * A thread is used only when it is free: a question that finds them all busy (another question holds them) is searched
 * here whole, so one slow question never queues another. A change to the index goes through `exclusive`: it waits
 * until no split question is in flight, and none is split while it waits, so it is never starved.
 */

/** What a search thread is sent for one question: it claims ranges of its documents until none is left. */
export type Request = {
  id: number;
  /** The plan's lists, strongest first, with their IDFs and bounds in the same order. */
  lists: ListView[];
  idfs: Float64Array;
  bounds: Float64Array;
  termOrder: Int32Array;
  k: number;
  k1: number;
  b: number;
  averageLength: number;
  threshold: number;
  docLength: Int32Array;
  deleted: Uint8Array;
  channelOfDoc: Int32Array;
  /** By channel number: 1 when the question's scope holds the channel. */
  allowed: Uint8Array;
  shared: SharedArrayBuffer;
  /** The counter ranges are claimed from (`claims`). */
  claims: SharedArrayBuffer;
  documents: number;
  step: number;
};

export type Reply = { id: number; docs: Int32Array<ArrayBuffer>; scores: Float64Array<ArrayBuffer>; postings: number } | { id: number; error: string };

/** Which documents a question may be answered with. */
export type Filter = { deleted: Uint8Array; channelOfDoc: Int32Array; allowed: Uint8Array };

export type Shards = {
  /** The finalists of each thread that searched documents 0 to below `documents`: `MaxScore.best` merges them. */
  search(plan: MaxScore.Plan, documents: number, filter: Filter): Promise<MaxScore.Finalists[]>;
  /**
   * Runs `change` (which changes the index) once no question split over threads is in flight, in the same turn as it
   * finds none; questions asked meanwhile are searched here whole.
   */
  exclusive<T>(change: () => T): Promise<T>;
  /**
   * Starts the search threads, when the index has `documents` enough to use them (a load calls it, so they are ready
   * by the first question); resolves with how many threads a question may use now, this one included.
   */
  start(documents: number): Promise<number>;
  close(): Promise<void>;
};

export type Options = {
  /** Threads a question's first stage may use, this one included (1: this one only). */
  threads: number;
  /** Below this many documents a question is searched on this thread alone: the hand-off would cost what it saves. */
  minDocuments: number;
  /** A search thread failed or ended: questions are split over the others from then on (searched here alone when none is left). */
  onFailure?: (error: Error) => void;
};

/** Questions split over threads since the process started: what tests and the benchmark read. */
export const counters = { split: 0 };

/** A thread that has not answered in this long is taken to have failed: it is ended, and the question searched here. */
const answerMs = 10_000;

/** Documents a range holds are a multiple of this, the search's window. */
const window = 4096;
/** Ranges a question's documents are cut into, per thread: the last one claimed is all a thread can wait on. */
const rangesPerThread = 8;

/** An array as a message carries it: shared memory as it is; anything else copied, only as long as the view. */
const portable = <T extends Int32Array | Uint8Array | Uint16Array | Float64Array>(array: T): T =>
  array.buffer instanceof SharedArrayBuffer || (array.byteOffset === 0 && array.byteLength === array.buffer.byteLength) ? array : (array.slice() as T);

const viewOf = (view: ListView): ListView => ({
  ...view,
  firsts: portable(view.firsts),
  offsets: portable(view.offsets),
  bytes: portable(view.bytes),
  later: portable(view.later),
  tailDocs: portable(view.tailDocs),
  tailCounts: portable(view.tailCounts),
});

/** Documents per range for a question searched by `threads` threads: whole windows. */
export const stepFor = (documents: number, threads: number): number => Math.max(1, Math.ceil(documents / (threads * rangesPerThread) / window)) * window;

/**
 * Documents 0 to below `documents`, claimed range by range by whichever thread asks next: each claim takes the next
 * `step` documents from a counter in shared memory (`buffer`, made fresh for each question).
 */
export function claims(buffer: SharedArrayBuffer, documents: number, step: number): MaxScore.Ranges {
  const next = new Int32Array(buffer, 0, 1);
  return () => {
    const from = Atomics.add(next, 0, 1) * step;
    return from < documents ? { from, to: Math.min(from + step, documents) } : undefined;
  };
}

type Helper = {
  worker: Worker;
  ready: boolean;
  /** Settles once the thread is ready, or has failed. */
  started: Promise<void>;
  failed: boolean;
  waiting: { resolve: (found: MaxScore.Finalists) => void; reject: (error: Error) => void } | undefined;
};

export function create(options: Options): Shards {
  const helpers: Helper[] = [];
  let started = false;
  let closing = false;
  let nextId = 1;
  /** Questions split over threads and not yet answered, fallbacks included; changes waiting for them. */
  let inFlight = 0;
  let changesWaiting = 0;
  let idleWaiters: (() => void)[] = [];
  const released = () => {
    if (inFlight > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const wake of waiters) wake();
  };
  const fail = (helper: Helper, error: Error) => {
    if (helper.failed) return;
    helper.failed = true;
    helper.waiting?.reject(error);
    helper.waiting = undefined;
    void helper.worker.terminate();
    if (!closing) options.onFailure?.(error);
  };
  const begin = () => {
    started = true;
    for (let i = 1; i < options.threads; i++) {
      let worker: Worker;
      try {
        worker = Threads.start(Threads.sibling(import.meta.url, 'SearchThread'), {});
      } catch (error) {
        // No thread can be had (the process's limit): questions are searched here alone.
        options.onFailure?.(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      let began = () => {};
      const helper: Helper = { worker, ready: false, started: new Promise((resolve) => (began = resolve)), failed: false, waiting: undefined };
      worker.once('exit', began);
      worker.on('message', (message: Reply | 'ready') => {
        if (message === 'ready') {
          helper.ready = true;
          worker.unref();
          return began();
        }
        const waiting = helper.waiting;
        helper.waiting = undefined;
        worker.unref();
        if ('error' in message) waiting?.reject(new Error(message.error));
        else waiting?.resolve(message);
      });
      worker.on('messageerror', (error) => fail(helper, error));
      worker.on('error', (error) => fail(helper, error));
      worker.on('exit', (code) => fail(helper, new Error(`the search thread ended (exit code ${code})`)));
      // A thread holds the process open only while it starts or answers (`unref` once it is ready, and after each
      // answer): a command whose work is done does not wait for it, and one awaiting it is not ended under it.
      helpers.push(helper);
    }
  };
  const ask = (helper: Helper, request: Omit<Request, 'id'>) =>
    new Promise<MaxScore.Finalists>((resolve, reject) => {
      const timer = setTimeout(() => fail(helper, new Error(`the search thread did not answer in ${answerMs / 1000} s`)), answerMs);
      timer.unref();
      const done = () => clearTimeout(timer);
      helper.waiting = { resolve: (found) => (done(), resolve(found)), reject: (error) => (done(), reject(error)) };
      helper.worker.ref();
      try {
        helper.worker.postMessage({ ...request, id: nextId++ });
      } catch (error) {
        fail(helper, error instanceof Error ? error : new Error(String(error)));
      }
    });

  /** A question searched by this thread and the free ones, claiming ranges as they go; here whole when one fails. */
  const split = async (plan: MaxScore.Plan, documents: number, step: number, filter: Filter, accept: (doc: number) => boolean, free: Helper[], whole: () => MaxScore.Finalists[]): Promise<MaxScore.Finalists[]> => {
    const { deleted, channelOfDoc, allowed } = filter;
    const claimed = new SharedArrayBuffer(4);
    const threshold = new MaxScore.SharedThreshold();
    threshold.raise(plan.threshold);
    const common = {
      lists: plan.lists.map((list) => viewOf(list.view())),
      idfs: plan.idfs,
      bounds: plan.bounds,
      termOrder: plan.termOrder,
      k: plan.k,
      k1: plan.scoring.k1,
      b: plan.scoring.b,
      averageLength: plan.scoring.averageLength,
      threshold: plan.threshold,
      docLength: portable(plan.scoring.docLength),
      deleted: portable(deleted),
      channelOfDoc: portable(channelOfDoc),
      allowed,
      shared: threshold.buffer,
      claims: claimed,
      documents,
      step,
    };
    const ranges = claims(claimed, documents, step);
    const theirs = free.map((helper) => ask(helper, common));
    let here: MaxScore.Finalists;
    try {
      here = MaxScore.search(plan, ranges, accept, threshold);
    } catch (error) {
      // Not answered before the threads are: no rejection of theirs is left unheard, and no change lands meanwhile.
      await Promise.allSettled(theirs);
      throw error;
    }
    // A thread that failed may have claimed ranges it did not search: the question is searched again here, whole.
    const answered = await Promise.allSettled(theirs);
    const found = answered.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    return found.length < answered.length ? whole() : [here, ...found];
  };

  return {
    async search(plan, documents, filter) {
      const { deleted, channelOfDoc, allowed } = filter;
      const accept = (doc: number) => deleted[doc] === 0 && allowed[channelOfDoc[doc]!] === 1;
      const whole = () => [MaxScore.search(plan, MaxScore.once({ from: 0, to: documents }), accept)];
      // The exhaustive search is the reference the pruned one is checked against: it stays on one thread.
      if (options.threads <= 1 || documents < options.minDocuments || plan.exhaustive || closing || changesWaiting > 0) return whole();
      if (!started) begin();
      const free = helpers.filter((h) => h.ready && !h.failed && h.waiting === undefined);
      if (free.length === 0) return whole();
      const step = stepFor(documents, free.length + 1);
      if (step >= documents) return whole();
      counters.split += 1;
      inFlight += 1;
      try {
        return await split(plan, documents, step, filter, accept, free, whole);
      } finally {
        inFlight -= 1;
        released();
      }
    },
    async exclusive(change) {
      changesWaiting += 1;
      try {
        while (inFlight > 0) await new Promise<void>((resolve) => idleWaiters.push(resolve));
        return change();
      } finally {
        changesWaiting -= 1;
      }
    },
    async start(documents) {
      if (options.threads <= 1 || documents < options.minDocuments || closing) return 1;
      if (!started) begin();
      await Promise.all(helpers.map((h) => h.started));
      return 1 + helpers.filter((h) => h.ready && !h.failed).length;
    },
    async close() {
      closing = true;
      await Promise.all(helpers.map((h) => h.worker.terminate()));
      helpers.length = 0;
    },
  };
}
