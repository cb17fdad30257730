// A worker thread's entry when it runs from the TypeScript sources: registers tsx in this thread (threads do not
// inherit the main thread's loader), then loads the module Threads.start named.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.module);
