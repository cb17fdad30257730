import type { Block, Document } from './Document.js';
import { squash } from './Document.js';

type TextItem = { str: string; hasEOL?: boolean; transform: number[]; height: number };
type Item = TextItem | { type: string };

/** A PDF that cannot be read (damaged, encrypted, or no PDF at all). */
export class PdfError extends Error {
  override name = 'PdfError';
}

/**
 * The text of a PDF, page by page: lines are rebuilt from the text layer and joined into paragraphs where the gap
 * between lines is wider than usual; every block keeps its page number (from 1) for citations. The document title
 * comes from the PDF's metadata when it has one. Scanned pages without a text layer give no text.
 */
export async function fromPdf(data: Uint8Array): Promise<Document> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let pdf: Awaited<ReturnType<typeof pdfjs.getDocument>['promise']>;
  try {
    // A copy: pdf.js takes ownership of (detaches) the buffer it is given.
    pdf = await pdfjs.getDocument({ data: new Uint8Array(data), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  } catch (error) {
    throw new PdfError(`not a readable PDF: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    const blocks: Block[] = [];
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      const items = (content.items as Item[]).filter((i): i is TextItem => 'str' in i);
      for (const text of paragraphs(items)) blocks.push({ kind: 'paragraph', text, page: number });
      page.cleanup();
    }
    const info = (await pdf.getMetadata().catch(() => undefined))?.info as { Title?: unknown } | undefined;
    const title = typeof info?.Title === 'string' && info.Title.trim() !== '' ? squash(info.Title) : undefined;
    return { title, blocks };
  } finally {
    await pdf.destroy();
  }
}

/** Lines from the text items, then paragraphs: a new one where the vertical gap exceeds 1.5 times the line height. */
function paragraphs(items: TextItem[]): string[] {
  const lines: { text: string; y: number; height: number }[] = [];
  let line = '';
  let y: number | undefined;
  let height = 0;
  const endLine = () => {
    if (squash(line) !== '') lines.push({ text: squash(line), y: y ?? 0, height: height || 10 });
    line = '';
    y = undefined;
    height = 0;
  };
  for (const item of items) {
    const itemY = item.transform[5] ?? 0;
    if (y !== undefined && Math.abs(itemY - y) > Math.max(2, height * 0.5)) endLine();
    y ??= itemY;
    height = Math.max(height, item.height || Math.abs(item.transform[3] ?? 0));
    line += item.str;
    if (item.hasEOL) endLine();
  }
  endLine();

  const out: string[] = [];
  let current: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const gap = i > 0 ? lines[i - 1]!.y - lines[i]!.y : 0;
    if (i > 0 && (gap > lines[i]!.height * 1.5 || gap < 0)) {
      out.push(joinLines(current));
      current = [];
    }
    current.push(lines[i]!.text);
  }
  if (current.length > 0) out.push(joinLines(current));
  return out.filter((p) => p !== '');
}

/** Joins a paragraph's lines, mending words hyphenated across a line break. */
const joinLines = (lines: string[]): string => squash(lines.reduce((text, next) => (/[a-z]-$/.test(text) ? `${text.slice(0, -1)}${next}` : `${text} ${next}`), '').trim());
