/** What every parser produces and the chunker consumes: a title and a sequence of blocks. */
export type Block =
  /** A `boundary` heading (a podcast chapter) always starts a new chunk: no chunk spans two chapters. */
  | { kind: 'heading'; text: string; level: number; page?: number | undefined; boundary?: boolean | undefined }
  | { kind: 'paragraph'; text: string; page?: number | undefined }
  | { kind: 'cue'; text: string; startSeconds: number; endSeconds: number; speaker?: string | undefined };

export type Document = {
  /** A title found in the content itself, such as a markdown H1. */
  title?: string | undefined;
  blocks: Block[];
};

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', lrm: '', rlm: '' };

/** Decodes the HTML entities that survive in captions and markdown: named basics and numeric references. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return entities[ref.toLowerCase()] ?? whole;
  });
}

/** Collapses runs of whitespace inside a paragraph. */
export function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Plain text: paragraphs are separated by blank lines; single line breaks inside one are soft wraps. */
export function fromPlainText(text: string): Document {
  const blocks: Block[] = text
    .replace(/\r\n?/g, '\n')
    .split(/\n\s*\n/)
    .map(squash)
    .filter((p) => p !== '')
    .map((p) => ({ kind: 'paragraph', text: p }));
  return { blocks };
}
