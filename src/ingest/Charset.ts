import jschardet from 'jschardet';

/**
 * Text from bytes, in the encoding the content declares: a byte order mark, then the Content-Type charset, then an
 * XML declaration or an HTML meta tag. Undeclared, it is UTF-8 when the bytes are valid UTF-8; otherwise the encoding
 * is guessed from the bytes (feeds in KOI8-R, windows-1251 or Shift_JIS with no declaration are still served), and
 * `warn` hears of a guess that is not sure, which falls back to windows-1252 as browsers do.
 */
export function decode(body: Buffer, contentType?: string, warn?: (message: string) => void): string {
  const { text, guess } = read(body, contentType);
  if (guess && guess.confidence < sure) warn?.(guess.note);
  return text;
}

/** How sure a guess must be to go unremarked. */
const sure = 0.8;

export type Decoded = { text: string; encoding: string; guess?: { confidence: number; note: string } };

/** The text and the encoding it was read in; `guess` when nothing declared it and it is not UTF-8. */
export function read(body: Buffer, contentType?: string): Decoded {
  const decoded = decodeBytes(body, contentType);
  return { ...decoded, text: repairC1(decoded.text) };
}

/**
 * windows-1252's characters for bytes 0x80 to 0x9F, where it differs from ISO-8859-1 (a table, because Node 20's
 * TextDecoder decodes these bytes as C1 controls even for windows-1252). Empty for the five unassigned bytes.
 */
const cp1252High = '\u20ac||\u201a|\u0192|\u201e|\u2026|\u2020|\u2021|\u02c6|\u2030|\u0160|\u2039|\u0152||\u017d|||\u2018|\u2019|\u201c|\u201d|\u2022|\u2013|\u2014|\u02dc|\u2122|\u0161|\u203a|\u0153||\u017e|\u0178'.split('|');

/**
 * C1 control characters (U+0080 to U+009F) never belong in text; where they appear, a windows-1252 document was
 * mislabelled or misdecoded, and each stands for its windows-1252 character ("don\u0092t" is "don’t").
 */
function repairC1(text: string): string {
  return /[\u0080-\u009f]/.test(text) ? text.replace(/[\u0080-\u009f]/g, (c) => cp1252High[c.charCodeAt(0) - 0x80]!) : text;
}

function decodeBytes(body: Buffer, contentType?: string): Decoded {
  const declared = fromBom(body) ?? fromContentType(contentType) ?? fromMarkup(body);
  if (declared !== undefined) {
    try {
      return { text: new TextDecoder(declared).decode(body), encoding: declared };
    } catch {
      // An unknown label: read it as undeclared.
    }
  }
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(body), encoding: 'utf-8' };
  } catch {
    return guessed(body);
  }
}

/**
 * Undeclared and not UTF-8: the encoding the bytes' letter statistics point to (jschardet, the detector VS Code
 * uses). Western text is often taken for a Central European encoding that shares most of its letters, so
 * windows-1252, the web's default, wins a near tie. An unsure or unreadable guess is read as windows-1252, as
 * browsers do, and the note says so.
 */
function guessed(body: Buffer): Decoded {
  const candidates = jschardet.detectAll(body);
  const western = candidates.find((c) => /^(windows-1252|iso-8859-1|ascii)$/i.test(c.encoding));
  let best = candidates[0];
  if (best && western && /^(windows-125[07]|iso-8859-(2|4|9|13|15))$/i.test(best.encoding) && western.confidence >= best.confidence - 0.15) best = western;
  const label = best?.encoding.toLowerCase();
  const confidence = best?.confidence ?? 0;
  if (label && confidence >= 0.5) {
    try {
      const text = new TextDecoder(label).decode(body);
      return { text, encoding: label, guess: { confidence, note: `no charset declared; read as ${label}, guessed from the bytes with confidence ${confidence.toFixed(2)}` } };
    } catch {
      // A label TextDecoder does not know: the fallback below.
    }
  }
  const note = `no charset declared and the bytes are not UTF-8; read as windows-1252${label ? ` (the best guess, ${label}, had confidence ${confidence.toFixed(2)})` : ''}`;
  return { text: new TextDecoder('windows-1252').decode(body), encoding: 'windows-1252', guess: { confidence: 0, note } };
}

function fromBom(body: Buffer): string | undefined {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  return undefined;
}

function fromContentType(contentType: string | undefined): string | undefined {
  const m = contentType && /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType);
  return m ? m[1]!.toLowerCase() : undefined;
}

function fromMarkup(body: Buffer): string | undefined {
  // Declarations sit in the first bytes, which are ASCII in every encoding this reads.
  const head = body.subarray(0, 1024).toString('latin1');
  const m = /<\?xml[^>]*encoding\s*=\s*["']([\w.:-]+)["']/i.exec(head) ?? /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head);
  return m ? m[1]!.toLowerCase() : undefined;
}
