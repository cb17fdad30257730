/** A fenced code block of the README, with where it starts and whether it is marked to be skipped (and why). */
export type Block = { language: string; line: number; text: string; skip: string | undefined };

/** Every fenced block, indented or not, with the `<!-- readme-test: skip, why -->` marker on the line before it. */
export function blocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w+)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    const marker = k >= 0 ? /<!-- readme-test: skip, (.+?) -->/.exec(lines[k]!) : null;
    found.push({ language: open[2]!, line: i + 1, text: body.join('\n'), skip: marker?.[1] });
    i = j;
  }
  return found;
}

/** One shell command of a block, with what the README says it prints. */
export type Command = {
  text: string;
  /** The `# ...` line after the command: its expected output, when it shows one. */
  shown: string | undefined;
  /** True when the command's own trailing comment names an error status (e.g. "# private: 404 ..."). */
  expectsError: boolean;
};

/** Splits a shell block into commands: continuation lines joined, comment lines attached to the command before. */
export function commands(block: string): Command[] {
  const out: Command[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    if (line.trim() === '') continue;
    if (line.trimStart().startsWith('#')) {
      const last = out.at(-1);
      if (last && last.shown === undefined && /^#\s*\{/.test(line.trim())) last.shown = line.trim().replace(/^#\s*/, '');
      continue;
    }
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i]!.trim()}`;
    const comment = /\s#\s(.*)$/.exec(line)?.[1] ?? '';
    out.push({ text: line, shown: undefined, expectsError: /\b[45]\d\d\b/.test(comment) });
  }
  return out;
}
