// The hooks LoadTrace.mjs registers (they run on the loader's own thread).
import fs from 'node:fs';

let file;
let refuse = [];

export function initialize(data) {
  file = data.file;
  refuse = data.refuse;
}

export async function resolve(specifier, context, next) {
  if (refuse.some((name) => specifier === name || specifier.startsWith(`${name}/`))) {
    const error = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (file) fs.appendFileSync(file, `${url}\n`);
  return next(url, context);
}
