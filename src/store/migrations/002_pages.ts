/** Page numbers of chunks from paged documents (PDF), for citations. */
export const pages = `
ALTER TABLE chunks ADD COLUMN page_start INTEGER;
ALTER TABLE chunks ADD COLUMN page_end INTEGER;
`;
