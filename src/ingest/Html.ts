import { Readability } from '@mozilla/readability';
import * as Dom from './Dom.js';
import type { Block, Document } from './Document.js';
import { squash } from './Document.js';

/** Elements whose text is never content. */
const skipped = new Set(['script', 'style', 'noscript', 'template', 'svg', 'iframe', 'object', 'embed', 'canvas', 'form', 'button', 'select', 'nav', 'head']);
/** Elements that end the running paragraph and start a new one. */
const blockLevel = new Set([
  'p', 'div', 'section', 'article', 'main', 'aside', 'header', 'footer', 'blockquote', 'pre', 'ul', 'ol', 'li', 'dl', 'dt', 'dd',
  'table', 'thead', 'tbody', 'tfoot', 'tr', 'figure', 'figcaption', 'hr', 'address', 'details', 'summary',
]);

type Node = { nodeType: number; nodeName: string; textContent: string | null; childNodes: ArrayLike<Node>; getAttribute?(name: string): string | null };

/**
 * Clean text from HTML, with structure kept: headings become heading blocks, paragraphs, list items, table rows and
 * preformatted text become paragraphs (list items marked "- ", cells joined with " | "), and scripts, styles, forms
 * and navigation are dropped.
 */
export function fromHtml(html: string): Document {
  const { document } = Dom.parse(`<!doctype html><html><body>${html}</body></html>`);
  return fromNode(document.body as unknown as Node, (document.title as string) || undefined);
}

/**
 * The main text of a whole web page (an article behind a feed entry), found by Readability; the page's title and
 * byline come with it. Falls back to the whole body when Readability finds no article.
 */
export function articleFromPage(html: string): Document & { byline?: string | undefined; publishedTime?: string | undefined; canonical?: string | undefined } {
  // A fragment (no <body>) is wrapped, or the DOM would have nothing in its body.
  if (!/<body[\s>]/i.test(html)) html = `<!doctype html><html><body>${html}</body></html>`;
  const { document } = Dom.parse(html);
  const title = (document.title as string | undefined)?.trim() || undefined;
  const canonical = (document.querySelector('link[rel="canonical"]') as { getAttribute(name: string): string | null } | null)?.getAttribute('href') ?? undefined;
  let article: ReturnType<Readability['parse']> = null;
  try {
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 200 }).parse();
  } catch {
    article = null;
  }
  if (!article?.content) {
    const { document: again } = Dom.parse(html);
    return { ...fromNode(again.body as unknown as Node, title), canonical };
  }
  const body = fromHtml(article.content);
  return { title: article.title?.trim() || title, blocks: body.blocks, byline: article.byline ?? undefined, publishedTime: article.publishedTime ?? undefined, canonical };
}

/** Marks pages put in headings for readers, not content: permalink anchors ("#", "¶") and wiki "[edit]" links. */
const anchorMark = /^\s*(#|¶|§|🔗|\[edit\])\s*$/;

function headingText(node: Node): string {
  if (node.nodeType === 3) return node.textContent ?? '';
  if (node.nodeType !== 1) return '';
  const className = node.getAttribute?.('class') ?? '';
  if (/editsection/.test(className) || anchorMark.test(node.textContent ?? '')) return '';
  return Array.from(node.childNodes).map(headingText).join('');
}

function fromNode(root: Node, title: string | undefined): Document {
  const blocks: Block[] = [];
  let running = '';
  const flush = () => {
    const text = squash(running);
    if (text !== '') blocks.push({ kind: 'paragraph', text });
    running = '';
  };
  const walk = (node: Node, context: { pre: boolean }) => {
    if (node.nodeType === 3) {
      running += context.pre ? (node.textContent ?? '') : (node.textContent ?? '').replace(/\s+/g, ' ');
      return;
    }
    if (node.nodeType !== 1) return;
    const tag = node.nodeName.toLowerCase();
    if (skipped.has(tag)) return;
    const heading = /^h([1-6])$/.exec(tag);
    if (heading) {
      flush();
      const text = squash(headingText(node));
      if (text !== '') blocks.push({ kind: 'heading', text, level: Number(heading[1]) });
      return;
    }
    if (tag === 'br') {
      running += '\n';
      return;
    }
    if (tag === 'img') {
      const alt = node.getAttribute?.('alt')?.trim();
      if (alt) running += ` ${alt} `;
      return;
    }
    if (tag === 'tr') {
      flush();
      const cells = Array.from(node.childNodes)
        .filter((c) => c.nodeType === 1 && /^t[hd]$/i.test(c.nodeName))
        .map((c) => squash(c.textContent ?? ''))
        .filter((c) => c !== '');
      if (cells.length > 0) blocks.push({ kind: 'paragraph', text: cells.join(' | ') });
      return;
    }
    const isBlock = blockLevel.has(tag);
    if (isBlock) flush();
    if (tag === 'li') running += '- ';
    for (const child of Array.from(node.childNodes)) walk(child, { pre: context.pre || tag === 'pre' });
    if (isBlock) flush();
  };
  walk(root, { pre: false });
  flush();
  return { title, blocks };
}
