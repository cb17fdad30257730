/**
 * The characters a TrueType or OpenType font's own `cmap` table gives its glyphs, read backwards: glyph number to the
 * character it draws. A PDF that embeds a font with no ToUnicode map still carries this table, and it is the one
 * account of what each glyph means that the font's maker wrote.
 *
 * Only Unicode subtables are read (platform 0, and platform 3 encodings 1 and 10; formats 4, 6 and 12): a symbol or
 * legacy-encoded table says nothing about characters. Where several characters share a glyph, the plain character
 * wins over a compatibility form of it (an Arabic letter over its isolated presentation form, a letter over its
 * full-width twin), then the lowest. Private-use characters name nothing and are left out.
 */

/** Glyph number to the character it draws; empty when the font has no Unicode cmap, or the table is damaged. */
export function glyphCharacters(font: Uint8Array): Map<number, string> {
  try {
    return fromTable(tableOf(new DataView(font.buffer, font.byteOffset, font.byteLength), 'cmap'));
  } catch (error) {
    // A truncated or hostile table is no mapping: the text stays as the PDF reader gave it.
    if (error instanceof RangeError) return new Map();
    throw error;
  }
}

/** The bytes of one table of an sfnt font (TrueType, OpenType), or undefined when it has none. */
function tableOf(view: DataView, tag: string): DataView | undefined {
  const count = view.getUint16(4);
  for (let i = 0; i < count; i++) {
    const entry = 12 + i * 16;
    const name = String.fromCharCode(view.getUint8(entry), view.getUint8(entry + 1), view.getUint8(entry + 2), view.getUint8(entry + 3));
    if (name !== tag) continue;
    const offset = view.getUint32(entry + 8);
    const length = view.getUint32(entry + 12);
    if (offset + length > view.byteLength) throw new RangeError(`${tag} table past the font's end`);
    return new DataView(view.buffer, view.byteOffset + offset, length);
  }
  return undefined;
}

/** Subtables by preference: full Unicode before the Basic Multilingual Plane. */
const preference = (platform: number, encoding: number): number =>
  platform === 3 && encoding === 10 ? 0 : platform === 0 && (encoding === 4 || encoding === 6) ? 1 : platform === 3 && encoding === 1 ? 2 : platform === 0 ? 3 : -1;

function fromTable(cmap: DataView | undefined): Map<number, string> {
  const glyphs = new Map<number, number>();
  if (cmap === undefined) return new Map();
  const subtables = new Map<number, number>();
  for (let i = 0; i < cmap.getUint16(2); i++) {
    const rank = preference(cmap.getUint16(4 + i * 8), cmap.getUint16(6 + i * 8));
    const offset = cmap.getUint32(8 + i * 8);
    // Records may share a subtable: each is read once, at its best rank.
    if (rank >= 0 && rank < (subtables.get(offset) ?? Infinity)) subtables.set(offset, rank);
  }
  // One budget for the whole table: many records, or overlapping ranges, could make a small table cost billions of steps.
  let budget = maxMappings;
  for (const [offset] of [...subtables].sort((a, b) => a[1] - b[1])) {
    const read = readers[cmap.getUint16(offset)];
    if (read === undefined) continue;
    read(cmap, offset, (code, glyph) => {
      if (--budget < 0) throw new RangeError('cmap maps more codes than Unicode has, twice over');
      if (glyph === 0 || !wanted(code)) return;
      const held = glyphs.get(glyph);
      if (held === undefined || better(code, held)) glyphs.set(glyph, code);
    });
    if (glyphs.size > 0) break;
  }
  return new Map([...glyphs].map(([glyph, code]) => [glyph, String.fromCodePoint(code)]));
}

const maxMappings = 0x110000 * 2;
const privateUse = (code: number) => (code >= 0xe000 && code <= 0xf8ff) || code >= 0xf0000;
const wanted = (code: number) => code > 0x1f && code <= 0x10ffff && !privateUse(code) && !(code >= 0xd800 && code <= 0xdfff) && code !== 0xfffd;
/** A compatibility character: one that NFKC turns into another. */
const compatible = (code: number) => String.fromCodePoint(code).normalize('NFKC') !== String.fromCodePoint(code);
const better = (code: number, held: number) => (compatible(code) !== compatible(held) ? compatible(held) : code < held);

type Reader = (cmap: DataView, offset: number, each: (code: number, glyph: number) => void) => void;

const readers: Record<number, Reader> = {
  // Segments of the Basic Multilingual Plane, each by delta or through the glyph array.
  4: (cmap, offset, each) => {
    const segments = cmap.getUint16(offset + 6) / 2;
    const ends = offset + 14;
    const starts = ends + segments * 2 + 2;
    const deltas = starts + segments * 2;
    const ranges = deltas + segments * 2;
    for (let s = 0; s < segments; s++) {
      const end = cmap.getUint16(ends + s * 2);
      const start = cmap.getUint16(starts + s * 2);
      const delta = cmap.getInt16(deltas + s * 2);
      const range = cmap.getUint16(ranges + s * 2);
      for (let code = start; code <= end && code !== 0xffff; code++) {
        if (range === 0) each(code, (code + delta) & 0xffff);
        else {
          const glyph = cmap.getUint16(ranges + s * 2 + range + (code - start) * 2);
          each(code, glyph === 0 ? 0 : (glyph + delta) & 0xffff);
        }
      }
    }
  },
  // One dense run of codes.
  6: (cmap, offset, each) => {
    const first = cmap.getUint16(offset + 6);
    const count = cmap.getUint16(offset + 8);
    for (let i = 0; i < count; i++) each(first + i, cmap.getUint16(offset + 10 + i * 2));
  },
  // Groups of consecutive codes over all of Unicode.
  12: (cmap, offset, each) => {
    const groups = cmap.getUint32(offset + 12);
    for (let g = 0; g < groups; g++) {
      const at = offset + 16 + g * 12;
      const start = cmap.getUint32(at);
      const end = Math.min(cmap.getUint32(at + 4), 0x10ffff);
      const glyph = cmap.getUint32(at + 8);
      for (let code = start; code <= end; code++) each(code, glyph + code - start);
    }
  },
};
