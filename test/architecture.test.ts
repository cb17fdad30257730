import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const page = fs.readFileSync(path.join(projectRoot, 'docs/architecture.md'), 'utf8');

/** Every TypeScript module of the program: src and tools. */
function modules(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(projectRoot, dir), { withFileTypes: true })) {
      const file = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts')) found.push(file);
    }
  };
  walk('src');
  walk('tools');
  return found;
}

/** Each module's relative imports (and re-exports), type-only ones included, as project paths. */
function imports(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of modules()) {
    const text = fs.readFileSync(path.join(projectRoot, file), 'utf8');
    const targets = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gms)].map((m) => path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
    graph.set(file, targets);
  }
  return graph;
}

/** A cycle through `start`, if its imports lead back to it. */
function cycleFrom(graph: Map<string, string[]>, start: string): string[] | undefined {
  const seen = new Set<string>();
  const walk = (file: string, trail: string[]): string[] | undefined => {
    for (const next of graph.get(file) ?? []) {
      if (next === start) return [...trail, next];
      if (seen.has(next)) continue;
      seen.add(next);
      const found = walk(next, [...trail, next]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(start, [start]);
}

/** The "never import" rules of the page: each row's folders and what they must not import. */
function rules(): { these: string[]; never: string[] }[] {
  const section = page.slice(page.indexOf('## Which way imports go'));
  return [...section.matchAll(/^\| (`[^|]+`) \| (`[^|]+`) \|$/gm)].map((row) => ({
    these: [...row[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
    never: [...row[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
  }));
}

const within = (file: string, place: string) => file === place || file.startsWith(`${place}/`);

/** The floors of the page, top first: the places each holds. */
function floors(): string[][] {
  const table = page.slice(page.indexOf('## Floors'), page.indexOf('## Seams'));
  return [...table.matchAll(/^\| [^|]+ \| (`[^|]+`) \| [^|]+ \|$/gm)].map((row) => [...row[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

/** How high a module stands (0 is the ground), or undefined beside the floors. */
function heightOf(file: string, table: string[][]): number | undefined {
  const index = table.findIndex((places) => places.some((place) => within(file, place)));
  return index === -1 ? undefined : table.length - 1 - index;
}

describe('docs/architecture.md matches the tree', () => {
  test('behavior: every path it names exists', () => {
    const named = [...page.matchAll(/`((?:src|tools|docs|test)(?:\/[\w.-]+)*)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((p) => !fs.existsSync(path.join(projectRoot, p)))).toEqual([]);
  });

  test('behavior: every folder of src is on a floor', () => {
    const floors = page.slice(page.indexOf('## Floors'), page.indexOf('## Seams'));
    const folders = fs.readdirSync(path.join(projectRoot, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => `src/${e.name}`);
    expect(folders.filter((f) => !floors.includes(`\`${f}\``))).toEqual([]);
  });

  test('behavior: no module imports itself back through others (type-only imports count)', () => {
    const graph = imports();
    const cycles = [...graph.keys()].map((file) => cycleFrom(graph, file)).filter((c) => c !== undefined);
    expect(cycles.map((c) => c.join(' -> '))).toEqual([]);
  });

  test('behavior: no floor reaches up, and nothing on a floor imports what stands beside them', () => {
    const table = floors();
    expect(table.length).toBeGreaterThanOrEqual(8);
    const broken: string[] = [];
    for (const [file, targets] of imports()) {
      const from = heightOf(file, table);
      if (from === undefined) continue;
      for (const target of targets) {
        const to = heightOf(target, table);
        if (to === undefined || to > from) broken.push(`${file} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('behavior: imports go the way the page says', () => {
    const table = rules();
    expect(table.length).toBeGreaterThanOrEqual(5);
    const broken: string[] = [];
    for (const [file, targets] of imports()) {
      for (const rule of table.filter((r) => r.these.some((place) => within(file, place)))) {
        for (const target of targets) if (rule.never.some((place) => within(target, place))) broken.push(`${file} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('error: the checker finds a cycle and a wrong-way import when there is one', () => {
    const graph = new Map([
      ['src/a.ts', ['src/b.ts']],
      ['src/b.ts', ['src/a.ts']],
    ]);
    expect(cycleFrom(graph, 'src/a.ts')).toEqual(['src/a.ts', 'src/b.ts', 'src/a.ts']);
    expect(within('src/retrieval/index/LexicalIndex.ts', 'src/retrieval')).toBe(true);
    expect(within('src/retrievalx.ts', 'src/retrieval')).toBe(false);
    const table = [['tools'], ['src/retrieval'], ['src/store']];
    expect(heightOf('src/store/Sql.ts', table)).toBe(0);
    expect(heightOf('tools/Tools.ts', table)).toBe(2);
    expect(heightOf('src/cli/Cli.ts', table)).toBeUndefined();
  });
});
