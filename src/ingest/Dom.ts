import { parseHTML } from 'linkedom';

/**
 * A parsed HTML document: linkedom's DOM, typed loosely, since the project compiles without the DOM library (and
 * linkedom's own types resolve `Window` to whatever a dependency declares globally).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LooseDocument = any;

/** Parses HTML into a DOM document. */
export function parse(html: string): { document: LooseDocument } {
  return parseHTML(html) as unknown as { document: LooseDocument };
}
