/**
 * The operations of a PDF content stream (ISO 32000 7.8.2): each operator with the operands before it. Only what the
 * marked-content reading needs is typed (names, numbers, strings, arrays, dictionaries); inline images are stepped
 * over whole. A damaged stream ends the operations where it breaks.
 */

export type Operand = number | boolean | null | { name: string } | Uint8Array | Operand[] | Map<string, Operand>;
export type Operation = { operator: string; operands: Operand[] };

const whitespace = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const delimiters = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);
const regular = (byte: number | undefined) => byte !== undefined && !whitespace.has(byte) && !delimiters.has(byte);

/** Bytes as ISO 8859-1 characters, one each (TextDecoder's "latin1" is windows-1252). */
const latin1 = { decode: (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1') };

/** Raised inside the reader where the stream stops making sense; the operations read so far stand. */
class Broken extends Error {}

/** The operations of a content stream, in order. */
export function operations(bytes: Uint8Array): Operation[] {
  const out: Operation[] = [];
  const reader = new Reader(bytes);
  let operands: Operand[] = [];
  try {
    for (;;) {
      const token = reader.next();
      if (token === undefined) break;
      if (typeof token === 'object' && token !== null && 'operator' in token) {
        if (token.operator === 'BI') reader.skipInlineImage();
        else out.push({ operator: token.operator, operands });
        operands = [];
      } else operands.push(token);
    }
  } catch (error) {
    if (!(error instanceof Broken)) throw error;
  }
  return out;
}

class Reader {
  at = 0;
  constructor(private readonly bytes: Uint8Array) {}

  /** The next operand or operator, or undefined at the end. */
  next(): Operand | { operator: string } | undefined {
    this.skipSpace();
    const byte = this.bytes[this.at];
    if (byte === undefined) return undefined;
    if (byte === 0x2f) return this.name();
    if (byte === 0x28) return this.literal();
    if (byte === 0x3c) return this.bytes[this.at + 1] === 0x3c ? this.dictionary() : this.hex();
    if (byte === 0x5b) return this.array();
    if (byte === 0x5d || byte === 0x3e || byte === 0x29 || byte === 0x7b || byte === 0x7d) {
      this.at++;
      return this.next();
    }
    const word = this.word();
    if (/^[+-]?(?:\d+\.?\d*|\.\d+)$/.test(word)) return Number(word);
    if (word === 'true' || word === 'false') return word === 'true';
    if (word === 'null') return null;
    return { operator: word };
  }

  skipInlineImage(): void {
    // The image's data runs to an "EI" standing alone after "ID".
    for (; this.at < this.bytes.length; this.at++) {
      if (this.bytes[this.at] === 0x45 && this.bytes[this.at + 1] === 0x49 && whitespace.has(this.bytes[this.at - 1] ?? 0x20) && !regular(this.bytes[this.at + 2])) {
        this.at += 2;
        return;
      }
    }
  }

  private skipSpace(): void {
    for (;;) {
      const byte = this.bytes[this.at];
      if (byte === undefined) return;
      if (whitespace.has(byte)) this.at++;
      else if (byte === 0x25) while (this.at < this.bytes.length && this.bytes[this.at] !== 0x0a && this.bytes[this.at] !== 0x0d) this.at++;
      else return;
    }
  }

  private word(): string {
    const start = this.at;
    while (regular(this.bytes[this.at])) this.at++;
    if (this.at === start) throw new Broken();
    return latin1.decode(this.bytes.subarray(start, this.at));
  }

  private name(): { name: string } {
    this.at++;
    const start = this.at;
    while (regular(this.bytes[this.at])) this.at++;
    const raw = latin1.decode(this.bytes.subarray(start, this.at));
    return { name: raw.replace(/#([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) };
  }

  private literal(): Uint8Array {
    this.at++;
    const out: number[] = [];
    let depth = 1;
    for (;;) {
      const byte = this.bytes[this.at++];
      if (byte === undefined) throw new Broken();
      if (byte === 0x5c) {
        const next = this.bytes[this.at++];
        if (next === undefined) throw new Broken();
        const escapes: Record<number, number> = { 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x66: 0x0c };
        if (next >= 0x30 && next <= 0x37) {
          let value = next - 0x30;
          for (let i = 0; i < 2 && (this.bytes[this.at] ?? 0) >= 0x30 && (this.bytes[this.at] ?? 0) <= 0x37; i++) value = value * 8 + this.bytes[this.at++]! - 0x30;
          out.push(value & 0xff);
        } else if (next === 0x0d) {
          if (this.bytes[this.at] === 0x0a) this.at++;
        } else if (next !== 0x0a) out.push(escapes[next] ?? next);
        continue;
      }
      if (byte === 0x28) depth++;
      if (byte === 0x29 && --depth === 0) return Uint8Array.from(out);
      out.push(byte);
    }
  }

  private hex(): Uint8Array {
    this.at++;
    const digits: number[] = [];
    for (;;) {
      const byte = this.bytes[this.at++];
      if (byte === undefined) throw new Broken();
      if (byte === 0x3e) break;
      const digit = parseInt(String.fromCharCode(byte), 16);
      if (!Number.isNaN(digit)) digits.push(digit);
    }
    if (digits.length % 2 === 1) digits.push(0);
    return Uint8Array.from({ length: digits.length / 2 }, (_, i) => digits[2 * i]! * 16 + digits[2 * i + 1]!);
  }

  private array(): Operand[] {
    this.at++;
    const out: Operand[] = [];
    for (;;) {
      this.skipSpace();
      if (this.bytes[this.at] === undefined) throw new Broken();
      if (this.bytes[this.at] === 0x5d) {
        this.at++;
        return out;
      }
      const item = this.next();
      if (item === undefined || (typeof item === 'object' && item !== null && 'operator' in item)) throw new Broken();
      out.push(item);
    }
  }

  private dictionary(): Map<string, Operand> {
    this.at += 2;
    const out = new Map<string, Operand>();
    for (;;) {
      this.skipSpace();
      if (this.bytes[this.at] === undefined) throw new Broken();
      if (this.bytes[this.at] === 0x3e && this.bytes[this.at + 1] === 0x3e) {
        this.at += 2;
        return out;
      }
      const key = this.next();
      const value = this.next();
      if (typeof key !== 'object' || key === null || !('name' in key) || value === undefined || (typeof value === 'object' && value !== null && 'operator' in value)) throw new Broken();
      out.set(key.name, value);
    }
  }
}
