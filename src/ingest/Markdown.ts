import { marked } from 'marked';
import type { Token, Tokens } from 'marked';
import { type Block, type Document, decodeEntities, squash } from './Document.js';

/** The visible text of inline tokens: link text without its URL, emphasis without its markers. */
function inline(tokens: Token[] | undefined, fallback: string): string {
  if (!tokens) return decodeEntities(fallback);
  return tokens
    .map((t) => {
      if (t.type === 'br') return ' ';
      if ('tokens' in t && Array.isArray(t.tokens) && t.tokens.length > 0) return inline(t.tokens, '');
      if (t.type === 'image') return (t as Tokens.Image).text;
      if (t.type === 'html') return '';
      return decodeEntities('text' in t ? String(t.text) : '');
    })
    .join('');
}

/** A list as lines, one per item, nested items indented under their parent. */
function listLines(list: Tokens.List, depth: number): string[] {
  return list.items.flatMap((item, i) => {
    const marker = list.ordered ? `${Number(list.start || 1) + i}.` : '-';
    const own: string[] = [];
    const nested: string[] = [];
    for (const token of item.tokens) {
      if (token.type === 'list') nested.push(...listLines(token as Tokens.List, depth + 1));
      else {
        const text = blockText(token);
        if (text !== '') own.push(text);
      }
    }
    return [`${'  '.repeat(depth)}${marker} ${own.join(' ')}`.trimEnd(), ...nested];
  });
}

/** The text of one block token inside a list item or quote, blocks separated by spaces. */
function blockText(token: Token): string {
  switch (token.type) {
    case 'list':
      return listLines(token as Tokens.List, 0).join(' ');
    case 'blockquote':
      return (token as Tokens.Blockquote).tokens.map(blockText).filter((t) => t !== '').join(' ');
    case 'code':
      return squash((token as Tokens.Code).text);
    case 'space':
    case 'hr':
    case 'html':
      return '';
    default:
      return squash(inline('tokens' in token ? (token.tokens as Token[]) : undefined, 'text' in token ? String(token.text) : ''));
  }
}

function blocksOf(tokens: Token[], out: Block[]): void {
  for (const token of tokens) {
    switch (token.type) {
      case 'heading': {
        const h = token as Tokens.Heading;
        out.push({ kind: 'heading', level: h.depth, text: squash(inline(h.tokens, h.text)) });
        break;
      }
      case 'paragraph': {
        const p = token as Tokens.Paragraph;
        out.push({ kind: 'paragraph', text: squash(inline(p.tokens, p.text)) });
        break;
      }
      case 'list': {
        // A list stays one paragraph, one line per item, so it is chunked with its neighbours, not torn apart.
        out.push({ kind: 'paragraph', text: listLines(token as Tokens.List, 0).join('\n') });
        break;
      }
      case 'blockquote':
        blocksOf((token as Tokens.Blockquote).tokens, out);
        break;
      case 'code':
        out.push({ kind: 'paragraph', text: (token as Tokens.Code).text });
        break;
      case 'table': {
        const table = token as Tokens.Table;
        const row = (cells: Tokens.TableCell[]) => cells.map((c) => squash(inline(c.tokens, c.text))).join(' | ');
        out.push({ kind: 'paragraph', text: [row(table.header), ...table.rows.map(row)].join('\n') });
        break;
      }
      case 'text': {
        const t = token as Tokens.Text;
        out.push({ kind: 'paragraph', text: squash(inline(t.tokens, t.text)) });
        break;
      }
      default:
        break; // space, hr, html, def: nothing to index
    }
  }
}

/** Markdown: headings kept as structure; inline markup, link URLs and raw HTML dropped. The first H1 is the title. */
export function fromMarkdown(text: string): Document {
  const blocks: Block[] = [];
  blocksOf(marked.lexer(text.replace(/\r\n?/g, '\n')), blocks);
  const nonEmpty = blocks.filter((b) => b.text !== '');
  const first = nonEmpty[0];
  const title = first?.kind === 'heading' && first.level === 1 ? first.text : undefined;
  return { title, blocks: title ? nonEmpty.slice(1) : nonEmpty };
}
