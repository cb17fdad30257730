import cliProgress from 'cli-progress';

/** A progress display: `tick` for one more step, `update` to jump to a count. */
export type Progress = { tick(detail: string): void; update(done: number, detail: string): void; stop(): void };

/** The CLI's output layer: results on stdout, progress and errors on stderr. */
export type Output = {
  line(text: string): void;
  json(value: unknown): void;
  table(rows: Record<string, unknown>[], columns?: string[]): void;
  error(text: string): void;
  /** Something an operator should know that did not stop the command, on stderr. */
  warn(text: string): void;
  /** A progress or status line on stderr, for people watching long work. */
  status(text: string): void;
  progress(total: number, label: string): Progress;
};

const cell = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function create(streams: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream & { isTTY?: boolean } } = process): Output {
  const write = (stream: NodeJS.WritableStream, text: string) => stream.write(`${text}\n`);
  return {
    line: (text) => write(streams.stdout, text),
    json: (value) => write(streams.stdout, JSON.stringify(value, null, 2)),
    error: (text) => write(streams.stderr, `error: ${text}`),
    warn: (text) => write(streams.stderr, `warning: ${text}`),
    status: (text) => write(streams.stderr, text),
    table(rows, columns) {
      if (rows.length === 0) {
        write(streams.stdout, '(none)');
        return;
      }
      const cols = columns ?? Object.keys(rows[0]!);
      const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
      const format = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
      write(streams.stdout, format(cols));
      for (const r of rows) write(streams.stdout, format(cols.map((c) => cell(r[c]))));
    },
    progress(total, label) {
      // A bar on a terminal; one line per step elsewhere, so logs and CI output stay readable.
      if (streams.stderr.isTTY) {
        const bar = new cliProgress.SingleBar(
          { format: `${label} [{bar}] {value}/{total} {detail}`, stream: streams.stderr, hideCursor: true, clearOnComplete: false },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, 0, { detail: '' });
        return { tick: (detail) => bar.increment(1, { detail }), update: (done, detail) => bar.update(done, { detail }), stop: () => bar.stop() };
      }
      // Off a terminal, at most about twenty lines however long the work.
      const step = Math.max(1, Math.ceil(total / 20));
      let done = 0;
      const update = (count: number, detail: string) => {
        const crossed = Math.floor(count / step) > Math.floor(done / step) || count === total;
        done = count;
        if (crossed) write(streams.stderr, `${label} ${done}/${total} ${detail}`.trimEnd());
      };
      return { tick: (detail) => update(done + 1, detail), update, stop: () => undefined };
    },
  };
}

/** What a shell reports for a Unix tool ended by SIGPIPE (128 + 13): the reader of its output went away. */
export const closedPipeStatus = 141;

/**
 * Ends the process quietly once the reader of stdout or stderr has gone (`profile-edge channels list | head`), as
 * Unix tools do. Node ignores SIGPIPE, so such a write fails with EPIPE instead, which would crash with a stack trace.
 * Other stream errors still crash, loudly.
 */
export function exitOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(closedPipeStatus);
    });
  }
}
