// A module hook for a spawned profile-edge: `--import ./LoadTrace.mjs` with LOAD_TRACE=<file> appends the URL of every
// module the process loads to that file; with LOAD_REFUSE=<package,...> those packages fail to resolve, as an
// optional dependency missing from an install would.
import { register } from 'node:module';

register(new URL('./LoadTraceHooks.mjs', import.meta.url), { data: { file: process.env.LOAD_TRACE, refuse: (process.env.LOAD_REFUSE ?? '').split(',').filter(Boolean) } });
