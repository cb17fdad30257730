/**
 * Text from bytes, in the encoding the content declares: a byte order mark, then the Content-Type charset, then an
 * XML declaration or an HTML meta tag; undeclared, UTF-8, or windows-1252 when the bytes are not UTF-8. Feeds in
 * windows-1251 or ISO-8859-1 are still common.
 */
export function decode(body: Buffer, contentType?: string): string {
  return repairC1(decodeBytes(body, contentType));
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

function decodeBytes(body: Buffer, contentType?: string): string {
  const declared = fromBom(body) ?? fromContentType(contentType) ?? fromMarkup(body);
  if (declared !== undefined) {
    try {
      return new TextDecoder(declared).decode(body);
    } catch {
      // An unknown label: read it as undeclared.
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    // Undeclared and not UTF-8: almost always windows-1252 (curly quotes as bytes 0x91 to 0x94), as browsers assume.
    return new TextDecoder('windows-1252').decode(body);
  }
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
