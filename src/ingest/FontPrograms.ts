import type { PDFDict as Dict } from '@cantoo/pdf-lib';
import * as FontCmap from './FontCmap.js';

/**
 * What the glyphs of a PDF's unmapped fonts stand for, read from the fonts themselves. A composite TrueType font with
 * no ToUnicode map (what CUPS's `texttopdf` and some older writers embed) leaves a reader only its glyph numbers, and
 * pdf.js reads those as characters: Arabic comes out as Cyrillic, "Netafim" as "1HWDILP". The embedded font program
 * still has its own `cmap`; read backwards through the font's CID-to-glyph map, it gives each code its character.
 *
 * pdf.js does not hand out the font programs it reads, so this reads the file's objects with pdf-lib, only for a
 * document that has such a font.
 */

/** Code to character, for each unmapped composite TrueType font named (by its base font name) in `names`. */
export async function unmappedFontCharacters(data: Uint8Array, names: Set<string>): Promise<Map<string, Map<number, string>>> {
  const out = new Map<string, Map<number, string>>();
  if (names.size === 0) return out;
  const pdfLib = await import('@cantoo/pdf-lib');
  const { PDFDict, PDFName, PDFArray, PDFRef, PDFNumber, PDFRawStream } = pdfLib;
  let document: Awaited<ReturnType<typeof pdfLib.PDFDocument.load>>;
  try {
    document = await quietly(() => pdfLib.PDFDocument.load(data, { ignoreEncryption: true, updateMetadata: false, throwOnInvalidObject: false }));
  } catch {
    return out;
  }
  const { context } = document;
  const name = (dict: Dict, key: string) => {
    const value = dict.lookup(PDFName.of(key));
    return value instanceof PDFName ? value.decodeText() : undefined;
  };
  /**
   * A stream's decoded bytes. A stream whose length is written after it (an indirect /Length, as CUPS writes) is read
   * again from the file once the length is known: pdf-lib finds its end by looking for the word "stream", which font
   * programs hold in their names ("Bitstream").
   */
  const streamBytes = (key: unknown): Uint8Array | undefined => {
    const ref = key instanceof PDFRef ? key : undefined;
    const object = ref === undefined ? key : context.lookup(ref);
    if (object instanceof PDFRawStream && object.dict.get(PDFName.of('Length')) instanceof PDFNumber) return pdfLib.decodePDFRawStream(object).decode();
    if (ref === undefined) return undefined;
    const raw = rawStream(data, ref.objectNumber, ref.generationNumber);
    if (raw === undefined) return undefined;
    const dict = pdfLib.PDFObjectParser.forBytes(raw.dict, context).parseObject();
    const length = dict instanceof PDFDict ? dict.lookup(PDFName.of('Length')) : undefined;
    if (!(dict instanceof PDFDict) || !(length instanceof PDFNumber)) return undefined;
    const contents = data.subarray(raw.start, raw.start + length.asNumber());
    if (!/^\s*endstream/.test(latin1(data.subarray(raw.start + length.asNumber(), raw.start + length.asNumber() + 16)))) return undefined;
    return pdfLib.decodePDFRawStream(PDFRawStream.of(dict, contents)).decode();
  };
  const seen = new Map<string, number>();
  for (const [, object] of context.enumerateIndirectObjects()) {
    try {
      if (!(object instanceof PDFDict) || name(object, 'Subtype') !== 'Type0') continue;
      const base = name(object, 'BaseFont');
      if (base === undefined || !names.has(base)) continue;
      seen.set(base, (seen.get(base) ?? 0) + 1);
      const encoding = name(object, 'Encoding');
      if (object.has(PDFName.of('ToUnicode')) || (encoding !== 'Identity-H' && encoding !== 'Identity-V')) continue;
      const descendants = object.lookup(PDFName.of('DescendantFonts'));
      const cidFont = descendants instanceof PDFArray ? descendants.lookup(0) : undefined;
      if (!(cidFont instanceof PDFDict) || name(cidFont, 'Subtype') !== 'CIDFontType2') continue;
      const descriptor = cidFont.lookup(PDFName.of('FontDescriptor'));
      const program = descriptor instanceof PDFDict ? streamBytes(descriptor.get(PDFName.of('FontFile2'))) : undefined;
      if (program === undefined) continue;
      const glyphs = FontCmap.glyphCharacters(program);
      if (glyphs.size === 0) continue;
      const cidToGid = cidFont.get(PDFName.of('CIDToGIDMap'));
      const map = cidToGid instanceof PDFName ? undefined : streamBytes(cidToGid);
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

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

/**
 * Where an indirect object's stream lies in the file: its dictionary's bytes and where its data starts. The last
 * definition wins, as in a file updated incrementally.
 */
function rawStream(data: Uint8Array, number: number, generation: number): { dict: Uint8Array; start: number } | undefined {
  const text = latin1(data);
  const header = new RegExp(`(?:^|[\\s>])${number}\\s+${generation}\\s+obj\\b`, 'g');
  let at: number | undefined;
  for (const match of text.matchAll(header)) at = match.index + match[0].length;
  if (at === undefined) return undefined;
  const open = /\s*<</y;
  open.lastIndex = at;
  if (!open.test(text)) return undefined;
  const keyword = />>\s*stream(?:\r\n|\n|\r)/g;
  keyword.lastIndex = at;
  const end = keyword.exec(text);
  if (end === null) return undefined;
  const dictEnd = end.index + 2;
  return { dict: data.subarray(at, dictEnd), start: end.index + end[0].length };
}

/**
 * pdf-lib reports each object it cannot parse on the console, and has no option to stop it; what it cannot parse is
 * handled here (`streamBytes`). Only its own two messages are held back.
 */
async function quietly<T>(work: () => Promise<T>): Promise<T> {
  /* eslint-disable no-console -- the one place that speaks to the console on pdf-lib's behalf */
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!/^(?:Trying to parse invalid object|Invalid object ref)/.test(String(args[0]))) warn(...args);
  };
  try {
    return await work();
  } finally {
    console.warn = warn;
  }
  /* eslint-enable no-console */
}
