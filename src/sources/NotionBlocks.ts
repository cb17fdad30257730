import type { Block } from '../ingest/Document.js';
import { squash } from '../ingest/Document.js';
import { type Loose, record, records, str } from './Loose.js';

/** A Notion block as the API returns it, read loosely: only the fields turned into text. */
export type NotionBlock = { id: string; type: string; has_children?: boolean; [type: string]: unknown };


/** Plain text of a rich text array (mentions and equations included). */
export function richText(value: unknown): string {
  if (!Array.isArray(value)) return '';
  return value.map((part) => (typeof record(part)?.plain_text === 'string' ? (record(part)!.plain_text as string) : '')).join('');
}

/** Block types whose children are fetched and rendered beneath them. */
export const nested = new Set(['paragraph', 'bulleted_list_item', 'numbered_list_item', 'to_do', 'toggle', 'quote', 'callout', 'column_list', 'column', 'synced_block', 'table', 'heading_1', 'heading_2', 'heading_3', 'template']);

/** The text blocks of a list of Notion blocks; `childrenOf` gives the already fetched children of a block. */
export function toBlocks(blocks: NotionBlock[], childrenOf: (id: string) => NotionBlock[], depth = 0): Block[] {
  const out: Block[] = [];
  const indent = '  '.repeat(depth);
  let number = 0;
  for (const block of blocks) {
    const body = record(block[block.type]) ?? {};
    // API versions before 2022-02-22 called a block's rich text `text`.
    const rich = body.rich_text ?? body.text;
    const text = squash(richText(rich));
    number = block.type === 'numbered_list_item' ? number + 1 : 0;
    const children = () => (block.has_children ? toBlocks(childrenOf(block.id), childrenOf, depth + 1) : []);
    switch (block.type) {
      case 'heading_1':
      case 'heading_2':
      case 'heading_3':
        if (text) out.push({ kind: 'heading', text, level: Number(block.type.slice(-1)) });
        out.push(...children());
        break;
      case 'paragraph':
      case 'quote':
      case 'callout':
      case 'toggle':
      case 'template':
        if (text) out.push({ kind: 'paragraph', text: `${indent}${block.type === 'quote' ? '> ' : ''}${text}` });
        out.push(...children());
        break;
      case 'bulleted_list_item':
      case 'numbered_list_item':
      case 'to_do': {
        const marker = block.type === 'bulleted_list_item' ? '- ' : block.type === 'numbered_list_item' ? `${number}. ` : body.checked ? '[x] ' : '[ ] ';
        if (text) out.push({ kind: 'paragraph', text: `${indent}${marker}${text}` });
        out.push(...children());
        break;
      }
      case 'code': {
        const language = typeof body.language === 'string' && body.language !== 'plain text' ? `${body.language}: ` : '';
        const code = richText(rich).trim();
        if (code) out.push({ kind: 'paragraph', text: `${language}${code}` });
        break;
      }
      case 'equation':
        if (typeof body.expression === 'string' && body.expression.trim()) out.push({ kind: 'paragraph', text: body.expression.trim() });
        break;
      case 'table':
        for (const row of block.has_children ? childrenOf(block.id) : []) {
          const cells = Array.isArray(record(row.table_row)?.cells) ? (record(row.table_row)!.cells as unknown[]).map((c) => squash(richText(c))) : [];
          if (cells.some((c) => c !== '')) out.push({ kind: 'paragraph', text: cells.join(' | ') });
        }
        break;
      case 'column_list':
      case 'column':
      case 'synced_block':
        out.push(...children());
        break;
      case 'image':
      case 'video':
      case 'file':
      case 'pdf':
      case 'audio':
      case 'bookmark':
      case 'embed': {
        // Media and links carry text only in their captions.
        const caption = squash(richText(body.caption));
        if (caption) out.push({ kind: 'paragraph', text: caption });
        break;
      }
      default:
        // child_page and child_database are items of their own; dividers, tables of contents, breadcrumbs and
        // unsupported blocks have no text.
        break;
    }
  }
  return out;
}

/** A page's title, from whichever property is its title. */
export function pageTitle(page: Loose): string | undefined {
  for (const property of Object.values(record(page.properties) ?? {})) {
    const p = record(property);
    if (p?.type === 'title') return squash(richText(p.title)) || undefined;
  }
  return undefined;
}

/** A database row's other properties as "Name: value" lines, so they can be searched and cited. */
export function propertyLines(page: Loose): string[] {
  const lines: string[] = [];
  for (const [name, property] of Object.entries(record(page.properties) ?? {})) {
    const p = record(property);
    if (!p || p.type === 'title') continue;
    const value = propertyValue(p);
    if (value) lines.push(`${name}: ${value}`);
  }
  return lines;
}

/** A number as text; a fraction is cut to the 15 digits a double holds, so a rollup's 0.1 + 0.2 reads 0.3 as in Notion. */
const numberText = (n: unknown): string | undefined =>
  typeof n !== 'number' || !Number.isFinite(n) ? undefined : Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(15)));

/** A date value's text: its start, and its end when it is a range. */
const dateText = (v: unknown): string | undefined => (typeof record(v)?.start === 'string' ? [record(v)!.start, record(v)!.end].filter(Boolean).join(' to ') : undefined);

/**
 * A property value as Notion shows it, from `{ type, [type]: value }`: the shape of a page's properties, of a formula's
 * result, and of each element of a rollup's array (so rollups recurse through here).
 */
function propertyValue(p: Loose): string | undefined {
  const v = p[p.type as string];
  switch (p.type) {
    case 'title':
    case 'rich_text':
      return squash(richText(v)) || undefined;
    case 'number':
      return numberText(v);
    case 'select':
    case 'status':
      return typeof record(v)?.name === 'string' ? (record(v)!.name as string) : undefined;
    case 'multi_select':
      return Array.isArray(v) ? v.map((o) => record(o)?.name).filter((n): n is string => typeof n === 'string').join(', ') || undefined : undefined;
    case 'date':
      return dateText(v);
    case 'checkbox':
    case 'boolean':
      return v === true ? 'yes' : v === false ? 'no' : undefined;
    case 'url':
    case 'email':
    case 'phone_number':
    case 'string':
      return typeof v === 'string' ? squash(v) || undefined : undefined;
    case 'formula':
      // A formula's result has the same shape: { type: 'string' | 'number' | 'boolean' | 'date', [type]: value }.
      return record(v) ? propertyValue(record(v)!) : undefined;
    case 'rollup': {
      const rollup = record(v);
      if (rollup?.type !== 'array') return rollup ? propertyValue(rollup) : undefined;
      return records(rollup.array).map(propertyValue).filter((value): value is string => value !== undefined).join(', ') || undefined;
    }
    case 'unique_id': {
      const id = record(v);
      const number = numberText(id?.number);
      if (number === undefined) return undefined;
      return typeof id!.prefix === 'string' && id!.prefix !== '' ? `${id!.prefix}-${number}` : number;
    }
    case 'files': {
      // Names only: a hosted file's URL is signed and expires within the hour, so it would change the page's
      // version on every sync. An unnamed external file is known by its (stable) URL.
      const names = records(v).map((file) => str(file.name) ?? str(record(file.external)?.url));
      return names.filter((name): name is string => name !== undefined).join(', ') || undefined;
    }
    default:
      return undefined;
  }
}
