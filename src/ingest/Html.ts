import { Readability } from '@mozilla/readability';
import * as Dom from './Dom.js';
import type { Block, Document } from './Document.js';
import { decodeEntities, squash } from './Document.js';

/** Elements whose text is never content. */
const skipped = new Set(['script', 'style', 'noscript', 'template', 'svg', 'iframe', 'object', 'embed', 'canvas', 'form', 'button', 'select', 'nav', 'head']);
/** Elements that end the running paragraph and start a new one. */
const blockLevel = new Set([
  'p', 'div', 'section', 'article', 'main', 'aside', 'header', 'footer', 'blockquote', 'pre', 'ul', 'ol', 'li', 'dl', 'dt', 'dd',
  'table', 'thead', 'tbody', 'tfoot', 'tr', 'figure', 'figcaption', 'hr', 'address', 'details', 'summary',
]);

type Node = { nodeType: number; nodeName: string; textContent: string | null; childNodes: ArrayLike<Node>; getAttribute?(name: string): string | null };

/** HTML element names: text escaped once too often is read again only when it is HTML, not XML or code shown as such. */
const htmlElements =
  'p|br|a|div|span|em|strong|b|i|u|s|ul|ol|li|dl|dt|dd|h[1-6]|img|blockquote|pre|code|table|thead|tbody|tfoot|tr|td|th|caption|figure|figcaption|hr|sup|sub|small|section|article|header|footer|aside|main|nav|del|ins|mark|abbr|cite|q|time|picture|video|audio|source';
/** Where markup begins: an HTML comment, or an HTML element's opening tag (its name captured). */
const markupStart = new RegExp(`<!--|<(${htmlElements})(?:\\s[^<>]*)?>`, 'i');
/** An entity left in text after the HTML was parsed: the source escaped it once more than HTML asks. */
const leftEntity = /&(?:amp|lt|gt|quot|apos|nbsp|#\d{1,7}|#x[0-9a-f]{1,6});/i;
/** How many times escaped markup is read again: once per extra escaping, and never without end. */
const maxRereads = 3;

/** How much of a text escaped markup must fill (after a plain prefix, such as a byline) to be read as HTML again. */
const markupShare = 0.75;

/**
 * Whether a text is HTML that was escaped once more than the format asks (as large link-sharing sites' feeds write it:
 * `&amp;lt;!-- SC_OFF --&amp;gt;&amp;lt;div class="md"&amp;gt;`, sometimes after a short byline of plain text in the
 * same field): it ends with a tag, the markup fills most of it, and it holds an HTML comment or an HTML element's
 * opening tag with its closing one. Prose that mentions `<p>`, or shows a comment or a tag pair in a sentence, stays as
 * written, and so does XML shown as an example; code is never read again (see fromNode). Linear in the text's length.
 */
export function isEscapedMarkup(text: string): boolean {
  const t = text.trim();
  if (!t.endsWith('>')) return false;
  const first = markupStart.exec(t);
  if (first === null || t.length - first.index < markupShare * t.length) return false;
  if (first[1] === undefined) return t.includes('-->', first.index + 4);
  return new RegExp(`</${first[1]}\\s*>`, 'i').test(t.slice(first.index + first[0].length));
}

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
  type Context = { pre: boolean; code: boolean; rereads: number };
  const text = (value: string, context: Context) => {
    // Code is shown as written. Anything else that is itself markup, or entities, was escaped once too often: the
    // entities are decoded, and markup is read as HTML, as many times as it was escaped (up to a bound).
    const read = !context.code && context.rereads < maxRereads && leftEntity.test(value) && !isEscapedMarkup(value) ? decodeEntities(value) : value;
    if (!context.code && context.rereads < maxRereads && isEscapedMarkup(read)) {
      const { document } = Dom.parse(`<!doctype html><html><body>${read}</body></html>`);
      children(document.body as unknown as Node, { ...context, rereads: context.rereads + 1 });
      return;
    }
    running += context.pre ? read : read.replace(/\s+/g, ' ');
  };
  // Adjacent text nodes are one text (a parser may split text at each entity).
  const children = (node: Node, context: Context) => {
    let pending = '';
    for (const child of Array.from(node.childNodes)) {
      if (child.nodeType === 3) {
        pending += child.textContent ?? '';
        continue;
      }
      if (pending !== '') text(pending, context);
      pending = '';
      walk(child, context);
    }
    if (pending !== '') text(pending, context);
  };
  const walk = (node: Node, context: Context) => {
    if (node.nodeType === 3) return text(node.textContent ?? '', context);
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
        // A cell is read as any other content (its text may itself be markup escaped once too often).
        .map((c) => squash(fromNode(c, undefined).blocks.map((b) => b.text).join(' ')))
        .filter((c) => c !== '');
      if (cells.length > 0) blocks.push({ kind: 'paragraph', text: cells.join(' | ') });
      return;
    }
    const isBlock = blockLevel.has(tag);
    if (isBlock) flush();
    if (tag === 'li') running += '- ';
    children(node, { pre: context.pre || tag === 'pre', code: context.code || tag === 'pre' || tag === 'code', rereads: context.rereads });
    if (isBlock) flush();
  };
  walk(root, { pre: false, code: false, rereads: 0 });
  flush();
  return { title, blocks };
}
