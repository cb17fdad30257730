/** The file formats an upload accepts, by extension: a module of its own, so the CLI's help names them without loading the readers. */
export const formats = {
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.txt': 'text',
  '.vtt': 'vtt',
  '.srt': 'srt',
  '.json': 'json',
  '.html': 'html',
  '.htm': 'html',
  '.pdf': 'pdf',
} as const;

export type Format = (typeof formats)[keyof typeof formats];
