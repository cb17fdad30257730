/**
 * WebAssembly text compiled with wabt, the WebAssembly project's own toolkit. The service loads checked-in binaries
 * (no compiler at run time); this is how they are made, and how a test checks each still matches its text.
 *
 *   npm run build:wasm     writes every src/**\/*.wasm from the .wat beside it
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import wabt from 'wabt';

/** The project's WebAssembly sources: each `X.wat` compiles to `X.wasm` beside it. */
export function sources(): string[] {
  const src = fileURLToPath(new URL('../../src', import.meta.url));
  return (fs.readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith('.wat')).map((f) => path.join(src, f));
}

/** The binary a text file compiles to. */
export async function compile(watFile: string): Promise<Uint8Array> {
  const toolkit = await wabt();
  const module = toolkit.parseWat(path.basename(watFile), fs.readFileSync(watFile, 'utf8'));
  try {
    module.validate();
    return Uint8Array.from(module.toBinary({}).buffer);
  } finally {
    module.destroy();
  }
}

export const binaryOf = (watFile: string): string => watFile.replace(/\.wat$/, '.wasm');

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  for (const file of sources()) {
    fs.writeFileSync(binaryOf(file), await compile(file));
    process.stdout.write(`${path.relative(process.cwd(), binaryOf(file))}\n`);
  }
}
