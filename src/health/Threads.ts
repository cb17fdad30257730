import { Worker } from 'node:worker_threads';

/**
 * Starts a worker thread on the module at `module` with `data` as its `workerData`. A thread does not inherit the
 * loader the main thread runs TypeScript sources with (tsx), so a `.ts` module is started through `TypeScript.mjs`,
 * which registers it first; built JavaScript starts directly.
 */
export function start(module: URL, data: Record<string, unknown>): Worker {
  if (!module.pathname.endsWith('.ts')) return new Worker(module, { workerData: data });
  return new Worker(new URL('./TypeScript.mjs', import.meta.url), { workerData: { ...data, module: module.href } });
}

/** The module `name` beside the one at `url`, as that one runs: `.ts` from the sources, `.js` from the build. */
export function sibling(url: string, name: string): URL {
  return new URL(`./${name}${url.slice(url.lastIndexOf('.'))}`, url);
}
