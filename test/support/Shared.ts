import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/config/Config.js';

/**
 * The read-only shared directory beside the project (datasets and real-world fixtures, not ours to copy in); override
 * with SHARED_DIR. Tests that need it are skipped, saying so, where it is absent: the project runs without it.
 */
export const directory = path.resolve(process.env.SHARED_DIR ?? path.join(projectRoot, '..', 'shared'));

export const fixturesDirectory = path.join(directory, 'fixtures');

export const hasFixtures = fs.existsSync(path.join(fixturesDirectory, 'MANIFEST.tsv'));

// eslint-disable-next-line no-console -- a test run should say why fixture tests were skipped
if (!hasFixtures) console.warn(`shared fixtures not found at ${fixturesDirectory} (set SHARED_DIR): fixture tests are skipped`);

/** A fixture's path, from its path in MANIFEST.tsv. */
export const fixture = (relative: string): string => path.join(fixturesDirectory, relative);

/** Every fixture under a folder of the fixtures directory, with a given extension. */
export function fixtures(folder: string, extensions: string[]): string[] {
  if (!hasFixtures) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (extensions.some((e) => entry.name.endsWith(e))) out.push(full);
    }
  };
  walk(path.join(fixturesDirectory, folder));
  return out.sort();
}
