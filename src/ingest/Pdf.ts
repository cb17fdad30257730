import * as Bidi from './Bidi.js';
import type { Block, Document } from './Document.js';
import { squash } from './Document.js';
import * as GlyphValues from './GlyphValues.js';
import * as PdfFonts from './PdfFonts.js';
import * as VisualOrder from './VisualOrder.js';

type TextItem = { str: string; dir?: string; hasEOL?: boolean; transform: number[]; width?: number; height: number; fontName?: string; phrase?: boolean };
type Item = TextItem | { type: string };
type Line = { text: string; y: number; height: number };

/**
 * The version of how text is read from a PDF: part of an upload's fingerprint, so a re-upload of a PDF indexed by an
 * older reading is indexed again (2: right-to-left lines in reading order, running lines dropped, metadata titles;
 * 3: right-to-left text stored in visual order, with multi-letter glyphs and glyph junk; 4: damaged glyph values put
 * back from the font's glyph order, glyphs read from their codes dropped, word gaps measured on their own line, and a
 * line's direction from the side its stop is drawn on; 5: fonts with no ToUnicode map read by their own cmap, glyphs
 * mapped to nothing read by their marked content's replacement text, pages drawn in reading order read as drawn, lone
 * Greek letters kept, titles written as UTF-8 bytes).
 */
export const extraction = 5;

/** A PDF that cannot be read (damaged, encrypted, or no PDF at all). */
export class PdfError extends Error {
  override name = 'PdfError';
}

/**
 * The text of a PDF, page by page, as it reads: lines are rebuilt from the text layer in logical order (right-to-left
 * scripts included), running headers, footers and page numbers are left out, and lines are joined into paragraphs
 * where the gap between lines is wider than usual; every block keeps its page number (from 1) for citations. The
 * document title comes from the PDF's metadata (XMP dc:title, else the info dictionary's Title) when that says
 * something. Scanned pages without a text layer give no text.
 */
export async function fromPdf(data: Uint8Array): Promise<Document> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let pdf: Awaited<ReturnType<typeof pdfjs.getDocument>['promise']>;
  try {
    // A copy: pdf.js takes ownership of (detaches) the buffer it is given.
    pdf = await pdfjs.getDocument({ data: new Uint8Array(data), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0, fontExtraProperties: true }).promise;
  } catch (error) {
    throw new PdfError(`not a readable PDF: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    const drawnPages: { items: TextItem[]; drawn: Drawn }[] = [];
    // Fonts looked at, by pdf.js's name.
    const fonts = new Map<string, FontFacts>();
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      const items = (content.items as Item[]).filter((i): i is TextItem => 'str' in i);
      const names = new Set(items.map((i) => i.fontName ?? ''));
      // What the page draws is looked at only where pdf.js's text may be wrong (a page's operators cost a second pass):
      // text that reads as misread, a font not seen before, or a font with no map.
      const misread = items.some((i) => mayBeMisread(i.str));
      // A font known to need the file's own account of its glyphs needs it on every page it draws.
      const needs = (n: string) => fonts.get(n)?.unmapped === true || fonts.get(n)?.blank === true;
      const unseen = [...names].some((n) => n !== '' && !fonts.has(n));
      let drawn: Drawn = { runs: [], fonts: new Map() };
      if (misread || unseen || [...names].some(needs)) {
        const operators = await page.getOperatorList();
        for (const name of names) if (name !== '' && !fonts.has(name)) fonts.set(name, fontFacts(page.commonObjs, name));
        const candidate = drawnGlyphs(operators, pdfjs.OPS);
        // A font that maps glyphs to nothing may say what they are elsewhere in the file.
        for (const [name, glyphs] of candidate.fonts) if (glyphs.some((g) => unreadable(g.text)) && fonts.get(name) !== undefined) fonts.get(name)!.blank = true;
        if (misread || [...names].some(needs)) drawn = candidate;
      }
      drawnPages.push({ items, drawn });
      page.cleanup();
    }
    // A font's order shows across the document: the glyphs of one page may not be enough to place another's.
    const fixes = GlyphValues.documentRepairs(drawnPages.map((p) => p.drawn.fonts));
    for (const [name, values] of await fileValues(data, fonts, drawnPages)) fixes.set(name, new Map([...(fixes.get(name) ?? []), ...values]));
    const repaired = drawnPages.map(({ items, drawn }) => withRepairedGlyphs(items, drawn.fonts, fixes));
    // Fonts with a glyph for a whole phrase (WeasyPrint maps a run of a line to one glyph) hold it in reading order
    // whatever the page draws: their text says nothing of the order.
    const phrasing = phraseFonts(drawnPages.map((p) => p.drawn.fonts), fixes);
    const inReadingOrder = VisualOrder.drawnInReadingOrder(repaired.flatMap((items) => items.filter((i) => !phrasing.has(i.fontName ?? '')).flatMap(drawnWords)));
    const pages = repaired.map((items, i) => linesOf(items, VisualOrder.repairs(drawnPages[i]!.drawn.runs, readable), inReadingOrder));
    const blocks: Block[] = [];
    withoutRunningLines(pages).forEach((lines, index) => {
      for (const text of paragraphs(lines)) blocks.push({ kind: 'paragraph', text, page: index + 1 });
    });
    const metadata = await pdf.getMetadata().catch(() => undefined);
    const info = metadata?.info as { Title?: unknown } | undefined;
    const title = [metadata?.metadata?.get('dc:title'), info?.Title].map(meaningfulTitle).find((t) => t !== undefined);
    return { title, blocks };
  } finally {
    await pdf.destroy();
  }
}

/**
 * Glyph text as a reader means it. Presentation forms (the contextual shapes of Arabic letters, ligatures such as
 * lam-alef, Latin fi) become the letters they draw (NFKC); the Arabic elongation stroke (tatweel), bidi controls, soft
 * hyphens and glyphs that map to nothing readable (private use, U+FFFD, control characters) are dropped, so search
 * sees the same words a person would type.
 */
function readable(text: string): string {
  return (
    text
      // An isolated Arabic vowel mark's compatibility form starts with a space; the mark belongs to its letter.
      .replace(/[\ufb00-\ufdff\ufe70-\ufefe]/gu, (c) => c.normalize('NFKC').trim())
      .replace(/[\t\n\r\f\v]/g, ' ')
      .replace(/[\p{Cc}\p{Co}\p{Cs}\ufffd\ufffe\uffff\ufeff\u00ad\u0640\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu, '')
  );
}

/**
 * Text pdf.js may have read wrong: right-to-left text (turned around glyph by glyph), a word made only of accented Latin
 * letters (a damaged value's low byte), or an ASCII letter beside a character whose low byte is empty (a ligature's
 * letters with their bytes swapped).
 */
function mayBeMisread(text: string): boolean {
  if (Bidi.hasRightToLeft(text) || /(?<![\p{L}\p{M}])[\u00c0-\u024f]{2,}(?![\p{L}\p{M}])/u.test(text)) return true;
  const chars = [...text];
  return chars.some((c, i) => /^[\u4100-\u7a00]$/u.test(c) && (c.charCodeAt(0) & 0xff) === 0 && /[A-Za-z]/.test(`${chars[i - 1] ?? ''}${chars[i + 1] ?? ''}`));
}

type Drawn = { runs: VisualOrder.Drawn; fonts: Map<string, GlyphValues.Glyph[]> };

/**
 * What is known of a font: its base font name, whether pdf.js found no ToUnicode map for it, and whether it draws glyphs
 * pdf.js could give no text.
 */
type FontFacts = { base?: string; unmapped: boolean; blank: boolean };

/**
 * A font as pdf.js loaded it: a composite font with no ToUnicode map reads each glyph's code as its character (an
 * identity map).
 */
function fontFacts(objects: { has(name: string): boolean; get(name: string): unknown }, name: string): FontFacts {
  if (!objects.has(name)) return { unmapped: false, blank: false };
  const font = objects.get(name) as { name?: unknown; composite?: unknown; toUnicode?: unknown } | null;
  const map = font?.toUnicode as { firstChar?: unknown; _map?: unknown } | undefined;
  const identity = typeof map === 'object' && map !== null && typeof map.firstChar === 'number' && map._map === undefined;
  const base = typeof font?.name === 'string' ? font.name : undefined;
  return { base, unmapped: base !== undefined && font?.composite === true && identity, blank: false };
}

/** A glyph value that reads as nothing: control characters (a writer's U+0000), but not a space. */
const unreadable = (text: string) => /^[\p{Cc}\p{Co}\ufffd]*$/u.test(text) && !/\s/u.test(text);

/**
 * The values of glyphs pdf.js cannot read, from the file itself (`PdfFonts`), by pdf.js's font name: a font with no
 * ToUnicode map by its embedded program's cmap (a glyph the cmap does not name stands for nothing), and glyphs mapped to
 * nothing by the replacement text of the marked content that draws them.
 */
async function fileValues(data: Uint8Array, fonts: Map<string, FontFacts>, pages: { drawn: Drawn }[]): Promise<Map<string, Map<number, string>>> {
  const named = (want: (f: FontFacts) => boolean) => new Set([...fonts.values()].filter((f) => want(f) && f.base !== undefined).map((f) => f.base!));
  const out = new Map<string, Map<number, string>>();
  const unmapped = named((f) => f.unmapped);
  const spoken = named((f) => f.blank && !f.unmapped);
  if (unmapped.size === 0 && spoken.size === 0) return out;
  const texts = await PdfFonts.glyphTexts(data, { unmapped, spoken });
  for (const [name, facts] of fonts) {
    const program = facts.unmapped ? texts.programs.get(facts.base!) : undefined;
    const said = facts.blank ? texts.spoken.get(facts.base!) : undefined;
    if (program === undefined && said === undefined) continue;
    const values = new Map<number, string>();
    for (const page of pages) {
      for (const glyph of page.drawn.fonts.get(name) ?? []) {
        if (program !== undefined) values.set(glyph.code, program.get(glyph.code) ?? '');
        else if (unreadable(glyph.text) && said!.has(glyph.code)) values.set(glyph.code, said!.get(glyph.code)!);
      }
    }
    if (values.size > 0) out.set(name, values);
  }
  return out;
}

/** Each text-showing operation's glyphs, as text, in the order they are drawn; and each font's glyphs, with codes. */
function drawnGlyphs(operators: { fnArray: number[]; argsArray: unknown[] }, ops: { showText: number; setFont: number }): Drawn {
  const runs: VisualOrder.Drawn = [];
  const fonts = new Map<string, GlyphValues.Glyph[]>();
  let font: GlyphValues.Glyph[] = [];
  operators.fnArray.forEach((fn, i) => {
    if (fn === ops.setFont) {
      const name = String((operators.argsArray[i] as unknown[])[0]);
      font = fonts.get(name) ?? [];
      fonts.set(name, font);
    }
    if (fn !== ops.showText) return;
    const glyphs = ((operators.argsArray[i] as unknown[][])[0] ?? []) as (number | { unicode?: unknown; originalCharCode?: unknown } | null)[];
    const shown = glyphs.flatMap((g) => (typeof g === 'object' && g !== null && typeof g.unicode === 'string' ? [{ code: Number(g.originalCharCode), text: g.unicode }] : []));
    // One at a time: a text-showing operation may draw hundreds of thousands of glyphs, more than a call's arguments.
    for (const glyph of shown) font.push(glyph);
    runs.push(shown.map((g) => g.text));
  });
  return { runs, fonts };
}

/** The items with the values of damaged glyphs repaired (`GlyphValues`), font by font. */
function withRepairedGlyphs(items: TextItem[], fonts: Map<string, GlyphValues.Glyph[]>, fixes: Map<string, Map<number, string>>): TextItem[] {
  if (![...fonts.keys()].some((name) => (fixes.get(name)?.size ?? 0) > 0)) return items;
  const cursors = new Map([...fonts.keys()].map((name) => [name, { at: 0 }]));
  return items.map((item) => {
    const name = item.fontName ?? '';
    const glyphs = fonts.get(name);
    const fix = fixes.get(name);
    if (glyphs === undefined || fix === undefined || fix.size === 0 || item.str === '') return item;
    const repaired = GlyphValues.repairedItem(item.str, item.dir === 'rtl', glyphs, cursors.get(name)!, fix);
    return { ...item, str: repaired.text, dir: repaired.rtl ? 'rtl' : 'ltr', phrase: repaired.phrase };
  });
}

/** Letters written only at a word's end, and their presentation forms. */
const endOnly = /[\u05da\u05dd\u05df\u05e3\u05e5\u0629\u0649\ufe93\ufe94\ufeef\ufef0]/u;

/** The fonts with a glyph that stands for three letters or more, its repairs (`fixes`) applied. */
function phraseFonts(pages: Map<string, GlyphValues.Glyph[]>[], fixes: Map<string, Map<number, string>>): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, Set<number>>();
  for (const fonts of pages) {
    for (const [name, glyphs] of fonts) {
      if (out.has(name)) continue;
      const codes = seen.get(name) ?? new Set<number>();
      seen.set(name, codes);
      for (const glyph of glyphs) {
        // A glyph is looked at once, however often it is drawn.
        if (codes.has(glyph.code)) continue;
        codes.add(glyph.code);
        if ((readable(fixes.get(name)?.get(glyph.code) ?? glyph.text).match(/\p{L}/gu)?.length ?? 0) > 2) {
          out.add(name);
          break;
        }
      }
    }
  }
  return out;
}

/**
 * An item's right-to-left words as it draws them, left to right (pdf.js turned the item into reading order). An item
 * repaired with a glyph standing for several letters (a phrase, as WeasyPrint maps them) holds them in reading order
 * whatever the page draws, and says nothing.
 */
function drawnWords(item: TextItem): string[] {
  // Only words with a letter that ends words tell (`VisualOrder.drawnInReadingOrder`): other items are not turned back.
  if (item.phrase === true || !endOnly.test(item.str)) return [];
  return Bidi.reordered(readable(item.str), item.dir === 'rtl')
    .split(/[^\p{L}\p{M}]+/u)
    .filter((w) => Bidi.hasRightToLeft(w));
}

/**
 * The page's lines in drawing order, each in reading order: a new line where the text moves off the baseline. Words
 * pdf.js read wrong are put right (`VisualOrder.repairs`), and glyph junk is dropped. A document drawn in reading order
 * (`VisualOrder.drawnInReadingOrder`) is read as drawn.
 */
function linesOf(items: TextItem[], wrong: Map<string, string>, inReadingOrder: boolean): Line[] {
  const lines: Line[] = [];
  let runs: Bidi.Run[] = [];
  let y: number | undefined;
  let height = 0;
  // The direction of the last line with letters: what a line of digits and stops alone continues.
  let rightToLeft = false;
  const endLine = () => {
    const text = squash(VisualOrder.withoutJunk(Bidi.logicalLine(runs, { rightToLeft, drawnInReadingOrder: inReadingOrder })));
    const letters = text.match(/\p{L}/gu)?.length ?? 0;
    if (letters > 0) rightToLeft = (text.match(rightToLeftLetters)?.length ?? 0) * 2 > letters;
    if (text !== '') lines.push({ text, y: y ?? 0, height: height || 10 });
    runs = [];
    y = undefined;
    height = 0;
  };
  for (const item of items) {
    const itemY = item.transform[5] ?? 0;
    if (y !== undefined && Math.abs(itemY - y) > Math.max(2, height * 0.5)) endLine();
    y ??= itemY;
    height = Math.max(height, item.height || Math.abs(item.transform[3] ?? 0));
    const rtl = item.dir === 'rtl' && !inReadingOrder;
    const read = inReadingOrder && Bidi.hasRightToLeft(item.str) ? Bidi.reordered(readable(item.str), item.dir === 'rtl') : readable(item.str);
    const text = VisualOrder.repaired(VisualOrder.itemText(read, rtl), wrong);
    runs.push({ text, x: item.transform[4] ?? 0, rtl, width: item.width, size: item.height || Math.abs(item.transform[3] ?? 0) });
    // pdf.js also ends a line after a vowel mark or a space nudged off the baseline; only text ends one here.
    if (item.hasEOL && /[\p{L}\p{N}]/u.test(item.str)) endLine();
  }
  endLine();
  return lines;
}

const rightToLeftLetters = new RegExp(`(?=\\p{L})[${Bidi.rtlScripts}]`, 'gu');

/** Lines looked at for running headers (from the top) and footers (from the bottom) of each page. */
const edgeLines = 3;

/**
 * The pages without their running headers and footers: at the top and bottom of each page, lines that repeat at the
 * same edge and height of many pages (at least two, and 40% of them, so odd and even pages may differ) once numbers
 * are set aside, and lone page numbers ("3", "- 3 -", "Page 3 of 12", "iv"). Lines are peeled from each edge until
 * one is content, so nothing inside the page goes.
 */
function withoutRunningLines(pages: Line[][]): Line[][] {
  // A running line sits at the same height on every page; body text that repeats seldom does.
  const key = (edge: string, line: Line) => `${edge}:${Math.round(line.y / 2)}:${line.text.toLowerCase().replace(/\p{Nd}+/gu, '#')}`;
  const edges = pages.map((lines) => {
    const byHeight = [...lines].sort((a, b) => b.y - a.y);
    return { top: byHeight.slice(0, edgeLines), bottom: byHeight.slice(-edgeLines).reverse() };
  });
  const pagesWith = new Map<string, number>();
  for (const edge of edges) {
    const keys = new Set([...edge.top.map((l) => key('top', l)), ...edge.bottom.map((l) => key('bottom', l))]);
    for (const k of keys) pagesWith.set(k, (pagesWith.get(k) ?? 0) + 1);
  }
  const repeats = Math.max(2, Math.ceil(pages.length * 0.4));
  return pages.map((lines, index) => {
    const running = new Set<Line>();
    for (const edge of ['top', 'bottom'] as const) {
      for (const line of edges[index]![edge]) {
        if (!isPageNumber(line.text) && (pagesWith.get(key(edge, line)) ?? 0) < repeats) break;
        running.add(line);
      }
    }
    return lines.filter((l) => !running.has(l));
  });
}

const pageWords = String.raw`page|pg\.?|p\.|seite|página|pagina|صفحة|الصفحة|עמוד|עמ'`;
const ofWords = String.raw`of|/|de|von|sur|di|من|מתוך`;
const pageNumber = new RegExp(String.raw`^[-–—|·•(\[\s]*(?:(?:${pageWords})\s*)?(\p{Nd}+|[ivxlcdm]+)(?:\s*(?:${ofWords})\s*\p{Nd}+)?[-–—|·•)\]\s]*$`, 'iu');
const roman = /^m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$/i;

/** A line that is only a page number, in the usual dressings. */
function isPageNumber(text: string): boolean {
  const number = pageNumber.exec(text)?.[1];
  return number !== undefined && (/\p{Nd}/u.test(number) || roman.test(number));
}

/** Paragraphs from a page's lines: a new one where the vertical gap exceeds 1.5 times the line height. */
function paragraphs(lines: Line[]): string[] {
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

/** Names that tools give a document nobody named. */
const generic = /^(?:untitled(?: document)?|no title|title|document|doc|new document|presentation|workbook|book|sheet|slide|sans titre|ohne titel|unbenannt|sin título|senza titolo|без названия|بدون عنوان|ללא כותרת|无标题|無題)(?:[\s_-]*\d+)?$/iu;
const application = /^(?:microsoft\s+)?(?:word|powerpoint|excel|visio|publisher)\s+-\s+/i;
const fileExtension = /\.(?:docx?|dotx?|rtf|odt|odp|ods|pptx?|xlsx?|pages|key|numbers|pdf|tex|dvi|ps|txt|md|html?|indd|ai|psd|qxp|wpd)$/i;

/**
 * A PDF metadata title (info dictionary Title or XMP dc:title) worth showing, or undefined. "Microsoft Word -
 * Annual report.docx" reads "Annual report"; what is left of such a file name must be more than one word, or the
 * uploaded file's own name serves as well. Generic names ("Untitled", "Document1"), paths, URLs and titles with
 * broken characters are no titles.
 */
export function meaningfulTitle(value: unknown): string | undefined {
  const given = Array.isArray(value) ? value.find((v) => typeof v === 'string') : value;
  if (typeof given !== 'string') return undefined;
  const raw = fromMisreadUtf8(given);
  if (/[\ufff0-\uffff]/u.test(raw)) return undefined;
  const text = squash(readable(raw));
  const name = squash(text.replace(application, '').replace(fileExtension, ''));
  const wasFileName = name !== text;
  if (!/[\p{L}\p{N}]/u.test(name) || generic.test(name)) return undefined;
  if (/^(?:[a-z][a-z0-9+.-]*:\/\/|(?:file|about|data):|[a-z]:\\|\/|\\\\)/i.test(name)) return undefined;
  if (wasFileName && !/\s/.test(name)) return undefined;
  return name;
}

/** PDFDocEncoding's characters that differ from Latin-1, by byte (0x18 to 0x1f and 0x80 to 0xa0). */
const pdfDocBytes = new Map<string, number>([
  ...[...'\u02d8\u02c7\u02c6\u02d9\u02dd\u02db\u02da\u02dc'].map((c, i): [string, number] => [c, 0x18 + i]),
  ...[...'\u2022\u2020\u2021\u2026\u2014\u2013\u0192\u2044\u2039\u203a\u2212\u2030\u201e\u201c\u201d\u2018\u2019\u201a\u2122\ufb01\ufb02\u0141\u0152\u0160\u0178\u017d\u0131\u0142\u0153\u0161\u017e'].map(
    (c, i): [string, number] => [c, 0x80 + i],
  ),
  ['\u20ac', 0xa0],
]);

/**
 * A metadata string written as UTF-8 bytes where PDF wants PDFDocEncoding or UTF-16 (CUPS's texttopdf writes titles
 * so): read by its bytes, "دليل" comes out "Ø¯Ù—Ù−Ù—". Such a string is read again as UTF-8 when all its
 * characters are single bytes and those bytes are valid UTF-8 with characters beyond ASCII; any other string stays.
 */
function fromMisreadUtf8(text: string): string {
  if (!/[\u0080-\uffff]/u.test(text)) return text;
  const bytes: number[] = [];
  for (const char of text) {
    const code = char.codePointAt(0)!;
    const byte = pdfDocBytes.get(char) ?? (code <= 0xff ? code : undefined);
    if (byte === undefined) return text;
    bytes.push(byte);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return text;
  }
}
