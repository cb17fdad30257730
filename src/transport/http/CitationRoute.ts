import type { Request, Response } from 'express';
import * as Caller from '../../auth/Caller.js';
import * as CitationPage from '../../pages/CitationPage.js';
import type { Services } from '../../Services.js';
import * as Call from '../Call.js';
import { presentedOf, sendError } from './Http.js';

/** Where a citation's profileUrl points: the item with the cited chunks, HTML for browsers, JSON on request. */
export function handler(services: Services) {
  return async (req: Request, res: Response) => {
    // Kept by no cache, and a link's signature is sent to no page it links to; errors included.
    res.vary('Accept').set({ 'Cache-Control': 'private, no-store', 'Referrer-Policy': 'no-referrer' });
    try {
      const caller = await Caller.resolve(services.store, presentedOf(req));
      const chunkIds = ([] as unknown[]).concat(req.query.chunks ?? []).flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean);
      const slug = String(req.params.slug);
      const itemId = String(req.params.itemId);
      const signed = req.query.sig !== undefined || req.query.expires !== undefined;
      const link = signed ? await services.citationLinks.verify({ slug, itemId, chunkIds, expires: req.query.expires, sig: req.query.sig }) : undefined;
      const page = await CitationPage.load(services.store, { slug, itemId, chunkIds, caller, link });
      if (req.accepts(['html', 'json']) === 'json') res.json(page);
      else res.set(CitationPage.htmlHeaders).type('html').send(CitationPage.html(page));
    } catch (thrown) {
      sendError(res, Call.failureOf(services, thrown));
    }
  };
}
