#!/usr/bin/env node
// Compiles the TypeScript sources (src/ and tools/) into JavaScript in dist/, one module for each, with the files they
// read beside them (JSON, WebAssembly, the contract source). `npm install` runs it (the `prepare` script), and
// bin/profile-edge.mjs checks before every start that what it runs was built from the sources as they are now.
//
// Plain JavaScript, so that node runs it with nothing compiled first; esbuild only transpiles (types are tsc's job,
// in `npm run typecheck`), which takes well under a second for the whole tree.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const dist = path.join(root, 'dist');
const stampFile = path.join(dist, 'build.json');
const lockDir = path.join(root, '.dist.lock');
/** The folders compiled, kept in the same place under dist/ so that their relative imports hold. */
const folders = ['src', 'tools'];
/** Files read at run time beside the modules that read them, copied as they are. */
const asset = /\.(json|wasm|sol)$/;

/** Every source and asset file, relative to the root, sorted. */
function sources() {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if ((entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) || asset.test(entry.name)) found.push(relative);
    }
  };
  for (const folder of folders) walk(folder);
  return found.sort();
}

const digest = (file) => crypto.createHash('sha1').update(fs.readFileSync(path.join(root, file))).digest('hex');

/** This script's own digest: a build made by another version of it is rebuilt. */
const builder = () => crypto.createHash('sha1').update(fs.readFileSync(fileURLToPath(import.meta.url))).digest('hex');

/**
 * Why dist/ cannot be run as it is, or undefined when it was built from the sources as they are now. Sizes and
 * modification times are compared first; a file whose time changed (a checkout, a touch) is compared by content.
 */
export function stale() {
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(stampFile, 'utf8'));
  } catch {
    return 'dist/ has not been built';
  }
  if (stamp.builder !== builder()) return 'bin/build.mjs changed since dist/ was built';
  const files = sources();
  const built = stamp.files ?? {};
  const gone = Object.keys(built).find((file) => !files.includes(file));
  if (gone) return `${gone} was removed since dist/ was built`;
  for (const file of files) {
    const was = built[file];
    if (!was) return `${file} was added since dist/ was built`;
    const now = fs.statSync(path.join(root, file));
    if (now.size === was.size && now.mtimeMs === was.mtimeMs) continue;
    if (now.size !== was.size || digest(file) !== was.sha1) return `${file} changed since dist/ was built`;
  }
  return undefined;
}

/**
 * Builds dist/ from the sources: into a fresh folder, put in place whole, so no process ever reads half a build.
 * `quiet` leaves esbuild's own report of an error out (the caller says it in a line of its own).
 */
export async function build({ quiet = false } = {}) {
  const started = Date.now();
  const { build: transpile } = await import('esbuild');
  const files = sources();
  const next = `${dist}.next-${process.pid}`;
  fs.rmSync(next, { recursive: true, force: true });
  await transpile({
    entryPoints: files.filter((f) => f.endsWith('.ts')).map((f) => path.join(root, f)),
    outdir: next,
    outbase: root,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // JSON modules keep their `with { type: 'json' }`: node 20 needs it, and esbuild's node20 table predates it.
    supported: { 'import-attributes': true },
    logLevel: quiet ? 'silent' : 'error',
  }).catch((error) => {
    fs.rmSync(next, { recursive: true, force: true });
    const first = error.errors?.[0];
    throw first ? new Error(`${first.location ? `${path.relative(root, first.location.file)}:${first.location.line}: ` : ''}${first.text}`) : error;
  });
  for (const file of files.filter((f) => asset.test(f))) {
    fs.mkdirSync(path.dirname(path.join(next, file)), { recursive: true });
    fs.copyFileSync(path.join(root, file), path.join(next, file));
  }
  const stamp = { builder: builder(), files: {} };
  for (const file of files) {
    const { size, mtimeMs } = fs.statSync(path.join(root, file));
    stamp.files[file] = { size, mtimeMs, sha1: digest(file) };
  }
  fs.writeFileSync(path.join(next, 'build.json'), `${JSON.stringify(stamp)}\n`);
  const old = `${dist}.old-${process.pid}`;
  if (fs.existsSync(dist)) fs.renameSync(dist, old);
  fs.renameSync(next, dist);
  fs.rmSync(old, { recursive: true, force: true });
  return { modules: files.filter((f) => f.endsWith('.ts')).length, seconds: (Date.now() - started) / 1000 };
}

/**
 * Makes sure dist/ holds the sources as they are: builds it when it is missing or stale, saying why on `say`. Processes
 * starting together build once: the others wait for the first (at most a minute), then find it fresh.
 */
export async function ensure(say = (line) => process.stderr.write(`${line}\n`)) {
  const why = stale();
  if (!why) return;
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      // A lock left by a build that died is taken over after a minute.
      const age = Date.now() - (fs.statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 60_000 || Date.now() > until) fs.rmSync(lockDir, { recursive: true, force: true });
      else await sleep(100);
    }
  }
  try {
    const still = stale();
    if (!still) return;
    let built;
    try {
      built = await build({ quiet: true });
    } catch (error) {
      throw new Error(`${still}, and building it failed: ${error.message.split('\n')[0]}. Run \`npm run build\` to see why.`);
    }
    say(`profile-edge: ${still}; built ${built.modules} modules in ${built.seconds.toFixed(1)} s`);
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const built = await build();
    process.stdout.write(`built ${built.modules} modules into dist/ in ${built.seconds.toFixed(1)} s\n`);
  } catch (error) {
    process.stderr.write(`build failed: ${error.message}\n`);
    process.exitCode = 1;
  }
}
