import type * as PdfLibModule from '@cantoo/pdf-lib';
import type { PDFDict as Dict, PDFContext as Context } from '@cantoo/pdf-lib';
import * as ContentStream from './ContentStream.js';
import * as FontCmap from './FontCmap.js';

/**
 * What the glyphs of a PDF's fonts stand for, read from the file's own objects where pdf.js cannot tell:
 * - a composite TrueType font with no ToUnicode map (what CUPS's `texttopdf` and some older writers embed) leaves a
 *   reader only its glyph numbers, which pdf.js reads as characters (Arabic comes out as Cyrillic, "Netafim" as
 *   "1HWDILP"); the embedded font program's own `cmap`, read backwards through the CID-to-glyph map, names them;
 * - a writer that maps glyphs to nothing (U+0000) may give their text as the replacement text of marked content
 *   (`/Span <</ActualText (...)>> BDC`, what calibre writes for shaped Arabic); pdf.js does not read it.
 *
 * pdf.js does not hand out font programs or marked-content properties, so this reads the file's objects with pdf-lib,
 * only for a document that needs it. Fonts are named by their base font name, as pdf.js names them too.
 */

/** Code to text, by base font name. */
export type FontTexts = Map<string, Map<number, string>>;

/**
 * The texts of the glyphs of the fonts named: by each unmapped composite TrueType font's program (`unmapped`), and by
 * the marked content that draws the fonts in `spoken`. A span drawing one glyph says what that glyph is; a code given
 * different texts in different spans is left out.
 */
export async function glyphTexts(data: Uint8Array, fonts: { unmapped: Set<string>; spoken: Set<string> }): Promise<{ programs: FontTexts; spoken: FontTexts }> {
  const out = { programs: new Map(), spoken: new Map() };
  if (fonts.unmapped.size === 0 && fonts.spoken.size === 0) return out;
  const file = await PdfFile.open(data);
  if (file === undefined) return out;
  return { programs: file.programTexts(fonts.unmapped), spoken: file.spokenTexts(fonts.spoken) };
}

type PdfLib = typeof PdfLibModule;
type Operand = ContentStream.Operand;
/** A font as a content stream selects it: its base font name, and the bytes of one code (0 where codes vary). */
type Font = { base: string; codeLength: number };
/** Marked content open in a content stream: its replacement text, and the glyphs it draws. */
type Span = { text?: string; glyphs: { base: string; code: number }[]; whole: boolean };

/** Forms inside forms deeper than this are not followed. */
const maxFormDepth = 8;
/** Content operations followed for one document, forms drawn again included: past them, marked content is not read. */
const maxOperations = 5_000_000;

type Walk = { spans: Span[]; note: (span: Span) => void; forms: Set<string>; budget: { operations: number } };

/** A document draws more than `maxOperations`. */
class Exhausted extends Error {}

class PdfFile {
  private constructor(
    private readonly lib: PdfLib,
    private readonly document: Awaited<ReturnType<PdfLib['PDFDocument']['load']>>,
    private readonly data: Uint8Array,
  ) {}

  static async open(data: Uint8Array): Promise<PdfFile | undefined> {
    const lib = await import('@cantoo/pdf-lib');
    try {
      // An empty password opens what readers open without asking (a file locked only against editing or printing).
      const document = await lib.PDFDocument.load(data, { ignoreEncryption: true, password: '', updateMetadata: false, throwOnInvalidObject: false });
      return new PdfFile(lib, document, data);
    } catch {
      return undefined;
    }
  }

  private get context(): Context {
    return this.document.context;
  }

  private name(dict: Dict, key: string): string | undefined {
    const value = dict.lookup(this.lib.PDFName.of(key));
    return value instanceof this.lib.PDFName ? value.decodeText() : undefined;
  }

  /**
   * A stream's decoded bytes. A stream whose length is written after it (an indirect /Length, as CUPS writes) is read
   * again from the file once the length is known: pdf-lib finds its end by looking for the word "stream", which font
   * programs hold in their names ("Bitstream").
   */
  private streamBytes(key: unknown): Uint8Array | undefined {
    const { PDFRef, PDFRawStream, PDFName, PDFNumber, PDFDict } = this.lib;
    const ref = key instanceof PDFRef ? key : undefined;
    const object = ref === undefined ? key : this.context.lookup(ref);
    if (object instanceof PDFRawStream && object.dict.get(PDFName.of('Length')) instanceof PDFNumber) return this.lib.decodePDFRawStream(object).decode();
    if (ref === undefined) return undefined;
    const raw = this.rawStream(ref.objectNumber, ref.generationNumber);
    if (raw === undefined) return undefined;
    const dict = this.lib.PDFObjectParser.forBytes(raw.dict, this.context).parseObject();
    const length = dict instanceof PDFDict ? dict.lookup(PDFName.of('Length')) : undefined;
    if (!(dict instanceof PDFDict) || !(length instanceof PDFNumber)) return undefined;
    const end = raw.start + length.asNumber();
    if (!/^\s*endstream/.test(latin1(this.data.subarray(end, end + 16)))) return undefined;
    return this.lib.decodePDFRawStream(PDFRawStream.of(dict, this.data.subarray(raw.start, end))).decode();
  }

  /** The file as text, one character a byte, and where each object's last definition starts: found once. */
  private objects: { text: string; at: Map<string, number> } | undefined;

  /**
   * Where an indirect object's stream lies in the file: its dictionary's bytes and where its data starts. The last
   * definition wins, as in a file updated incrementally.
   */
  private rawStream(number: number, generation: number): { dict: Uint8Array; start: number } | undefined {
    if (this.objects === undefined) {
      const text = latin1(this.data);
      const at = new Map<string, number>();
      for (const match of text.matchAll(/(?:^|[\s>])(\d+)\s+(\d+)\s+obj\b/g)) at.set(`${match[1]} ${match[2]}`, match.index + match[0].length);
      this.objects = { text, at };
    }
    const { text, at } = this.objects;
    const from = at.get(`${number} ${generation}`);
    if (from === undefined) return undefined;
    const open = /\s*<</y;
    open.lastIndex = from;
    if (!open.test(text)) return undefined;
    const keyword = />>\s*stream(?:\r\n|\n|\r)/g;
    keyword.lastIndex = from;
    const end = keyword.exec(text);
    if (end === null) return undefined;
    return { dict: this.data.subarray(from, end.index + 2), start: end.index + end[0].length };
  }

  /** Code to character for each unmapped composite TrueType font named, from its program's cmap. */
  programTexts(names: Set<string>): FontTexts {
    const { PDFDict, PDFName, PDFArray } = this.lib;
    const out: FontTexts = new Map();
    const seen = new Map<string, number>();
    if (names.size === 0) return out;
    for (const [, object] of this.context.enumerateIndirectObjects()) {
      try {
        if (!(object instanceof PDFDict) || this.name(object, 'Subtype') !== 'Type0') continue;
        const base = this.name(object, 'BaseFont');
        if (base === undefined || !names.has(base)) continue;
        seen.set(base, (seen.get(base) ?? 0) + 1);
        const encoding = this.name(object, 'Encoding');
        if (object.has(PDFName.of('ToUnicode')) || (encoding !== 'Identity-H' && encoding !== 'Identity-V')) continue;
        const descendants = object.lookup(PDFName.of('DescendantFonts'));
        const cidFont = descendants instanceof PDFArray ? descendants.lookup(0) : undefined;
        if (!(cidFont instanceof PDFDict) || this.name(cidFont, 'Subtype') !== 'CIDFontType2') continue;
        const descriptor = cidFont.lookup(PDFName.of('FontDescriptor'));
        const program = descriptor instanceof PDFDict ? this.streamBytes(descriptor.get(PDFName.of('FontFile2'))) : undefined;
        if (program === undefined) continue;
        const glyphs = FontCmap.glyphCharacters(program);
        if (glyphs.size === 0) continue;
        const cidToGid = cidFont.get(PDFName.of('CIDToGIDMap'));
        const map = cidToGid instanceof PDFName ? undefined : this.streamBytes(cidToGid);
        if (cidToGid !== undefined && !(cidToGid instanceof PDFName) && map === undefined) continue;
        // Identity encodings make each two-byte code its CID; with no map of its own, each CID is its glyph.
        const characters = map === undefined ? glyphs : new Map<number, string>();
        for (let cid = 0; map !== undefined && 2 * cid + 1 < map.length; cid++) {
          const character = glyphs.get((map[2 * cid]! << 8) | map[2 * cid + 1]!);
          if (character !== undefined) characters.set(cid, character);
        }
        out.set(base, characters);
      } catch {
        // A damaged font object is no mapping; the text stays as pdf.js read it.
        continue;
      }
    }
    // Two fonts of one name cannot be told apart by it.
    for (const [base, count] of seen) if (count > 1) out.delete(base);
    return out;
  }

  /** Code to text for the fonts named, from marked content with replacement text that draws one of their glyphs. */
  spokenTexts(names: Set<string>): FontTexts {
    const texts = new Map<string, Map<number, string | null>>();
    if (names.size === 0) return new Map();
    const note = (span: Span) => {
      if (span.text === undefined || !span.whole || span.glyphs.length !== 1) return;
      const { base, code } = span.glyphs[0]!;
      if (!names.has(base)) return;
      const codes = texts.get(base) ?? new Map<number, string | null>();
      texts.set(base, codes);
      const held = codes.get(code);
      // A code given two texts is not one glyph's text.
      codes.set(code, held === undefined || held === span.text ? span.text : null);
    };
    const budget = { operations: maxOperations };
    for (const page of this.document.getPages()) {
      try {
        // The references, not the streams: a stream whose length comes after it is read again by its reference.
        const contents = page.node.get(this.lib.PDFName.of('Contents'));
        const listed = contents === undefined ? undefined : this.context.lookup(contents);
        const streams = listed instanceof this.lib.PDFArray ? listed.asArray() : contents === undefined ? [] : [contents];
        const bytes = streams.map((stream) => this.streamBytes(stream) ?? new Uint8Array());
        this.walk(concat(bytes), page.node.Resources(), { spans: [], note, forms: new Set(), budget });
      } catch (error) {
        // A file that draws more than a reader should follow says nothing more; a page that cannot be read, nothing.
        if (error instanceof Exhausted) break;
        continue;
      }
    }
    return new Map([...texts].map(([base, codes]) => [base, new Map([...codes].filter((c): c is [number, string] => c[1] !== null))]));
  }

  /** Follows a content stream's fonts, marked content and forms, noting each span with replacement text as it closes. */
  private walk(bytes: Uint8Array, resources: Dict | undefined, state: Walk): void {
    const { PDFDict, PDFName } = this.lib;
    const fonts = new Map<string, Font | undefined>();
    let font: Font | undefined;
    const saved: (Font | undefined)[] = [];
    const show = (operand: Operand | undefined) => {
      if (!(operand instanceof Uint8Array)) return;
      const open = state.spans.findLast((s) => s.text !== undefined);
      if (open === undefined) return;
      if (font === undefined || font.codeLength === 0) {
        open.whole = false;
        return;
      }
      for (let i = 0; i + font.codeLength <= operand.length; i += font.codeLength) {
        open.glyphs.push({ base: font.base, code: font.codeLength === 2 ? (operand[i]! << 8) | operand[i + 1]! : operand[i]! });
      }
    };
    // A stream that opens no marked content and draws no form, outside any span, has nothing to say: not read.
    if (state.spans.length === 0 && !contains(bytes, 'BDC') && !contains(bytes, 'Do')) return;
    const operations = ContentStream.operations(bytes);
    state.budget.operations -= operations.length;
    if (state.budget.operations < 0) throw new Exhausted();
    for (const { operator, operands } of operations) {
      switch (operator) {
        case 'q':
          saved.push(font);
          break;
        case 'Q':
          font = saved.pop();
          break;
        case 'Tf': {
          const key = nameOf(operands[0]);
          if (key === undefined) break;
          if (!fonts.has(key)) fonts.set(key, this.fontOf(resources, key));
          font = fonts.get(key);
          break;
        }
        case 'Tj':
        case "'":
          show(operands[0]);
          break;
        case '"':
          show(operands[2]);
          break;
        case 'TJ':
          if (Array.isArray(operands[0])) for (const part of operands[0]) show(part);
          break;
        case 'BMC':
          state.spans.push({ glyphs: [], whole: true });
          break;
        case 'BDC': {
          const properties = operands[1];
          let text: string | undefined;
          if (properties instanceof Map) {
            const actual = properties.get('ActualText');
            text = actual instanceof Uint8Array ? textString(actual) : undefined;
          } else if (nameOf(properties) !== undefined && resources !== undefined) {
            const named = resources.lookup(PDFName.of('Properties'));
            const dict = named instanceof PDFDict ? named.lookup(PDFName.of(nameOf(properties)!)) : undefined;
            const actual = dict instanceof PDFDict ? dict.lookup(PDFName.of('ActualText')) : undefined;
            text = actual instanceof this.lib.PDFString || actual instanceof this.lib.PDFHexString ? actual.decodeText() : undefined;
          }
          state.spans.push({ text, glyphs: [], whole: true });
          break;
        }
        case 'EMC': {
          const span = state.spans.pop();
          if (span !== undefined) state.note(span);
          break;
        }
        case 'Do': {
          const key = nameOf(operands[0]);
          if (key === undefined || resources === undefined || state.forms.size >= maxFormDepth) break;
          const objects = resources.lookup(PDFName.of('XObject'));
          const ref = objects instanceof PDFDict ? objects.get(PDFName.of(key)) : undefined;
          const form = ref === undefined ? undefined : this.context.lookup(ref);
          if (!(form instanceof this.lib.PDFRawStream) || this.name(form.dict, 'Subtype') !== 'Form') break;
          // A form that draws itself, at any depth, is drawn once (as pdf.js does).
          const id = ref instanceof this.lib.PDFRef ? ref.toString() : undefined;
          if (id !== undefined && state.forms.has(id)) break;
          const own = form.dict.lookup(PDFName.of('Resources'));
          const content = this.streamBytes(ref);
          if (content !== undefined) this.walk(content, own instanceof PDFDict ? own : resources, { ...state, forms: new Set([...state.forms, id ?? `form ${state.forms.size}`]) });
          break;
        }
      }
    }
  }

  /** A font resource as a content stream selects it, or undefined when it is not one. */
  private fontOf(resources: Dict | undefined, key: string): Font | undefined {
    const { PDFDict, PDFName } = this.lib;
    const fonts = resources?.lookup(PDFName.of('Font'));
    const dict = fonts instanceof PDFDict ? fonts.lookup(PDFName.of(key)) : undefined;
    if (!(dict instanceof PDFDict)) return undefined;
    const base = this.name(dict, 'BaseFont');
    if (base === undefined) return undefined;
    if (this.name(dict, 'Subtype') !== 'Type0') return { base, codeLength: 1 };
    const encoding = this.name(dict, 'Encoding');
    return { base, codeLength: encoding === 'Identity-H' || encoding === 'Identity-V' ? 2 : 0 };
  }
}

const nameOf = (operand: Operand | undefined): string | undefined =>
  typeof operand === 'object' && operand !== null && !Array.isArray(operand) && !(operand instanceof Uint8Array) && !(operand instanceof Map) ? operand.name : undefined;

const contains = (bytes: Uint8Array, word: string): boolean => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(word, 0, 'latin1');

const concat = (parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length + 1, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    // Streams of one page join as if with a space between them.
    out[at + part.length] = 0x0a;
    at += part.length + 1;
  }
  return out;
};

/** A PDF text string: UTF-16BE with its byte order mark, UTF-8 with its, or else one byte a character. */
function textString(bytes: Uint8Array): string {
  if (bytes[0] === 0xfe && bytes[1] === 0xff) {
    let out = '';
    for (let i = 2; i + 1 < bytes.length; i += 2) out += String.fromCharCode((bytes[i]! << 8) | bytes[i + 1]!);
    return out;
  }
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder().decode(bytes.subarray(3));
  return latin1(bytes);
}

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

