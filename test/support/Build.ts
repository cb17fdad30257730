/**
 * vitest's global setup: the tests import the TypeScript sources, but the processes they spawn (`profile-edge serve`,
 * `mcp`, the CLI) run the JavaScript built from them, as users do. It is brought up to date once here, before any test
 * spawns one, rather than by the first processes racing to it.
 */
export default async function setup(): Promise<void> {
  const { ensure } = (await import('../../bin/build.mjs' as string)) as { ensure: (say?: (line: string) => void) => Promise<void> };
  await ensure((line) => process.stderr.write(`${line}\n`));
}
