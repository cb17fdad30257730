import type { Home } from '../contract/Contract.js';
import { version } from '../Version.js';

/**
 * What the server's own address shows: what it is, its version, and where to go next. A person who opens it in a
 * browser reads a page; a script reads the same as JSON.
 */
export function home(): Home {
  return {
    name: 'profile-edge',
    version,
    description: "Grounded, cited answers from experts' indexed content, for AI agents over MCP and plain HTTP.",
    links: [
      { label: 'Directory', href: '/api/profiles', about: 'the public profiles and their channels (JSON)' },
      { label: 'MCP endpoint', href: '/mcp', about: 'Streamable HTTP, stateless; GET shows its manifest, /{slug}/mcp serves one profile' },
      { label: 'OpenAPI', href: '/openapi.json', about: 'every REST path, field and error' },
      { label: 'SKILL.md', href: '/SKILL.md', about: 'when and how an agent should use this server, payments included' },
      { label: 'Health', href: '/health', about: 'liveness, and whether the database answers' },
    ],
  };
}

/** Nothing on the page loads or runs: no script, no style, no image. */
export const htmlHeaders: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The same as a page for a browser. */
export function html(page: Home): string {
  const links = page.links.map((l) => `<li><a href="${escape(l.href)}">${escape(l.label)}</a>: ${escape(l.about)}</li>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(page.name)} ${escape(page.version)}</title></head>
<body>
<h1>${escape(page.name)} <small>${escape(page.version)}</small></h1>
<p>${escape(page.description)}</p>
<ul>
${links}
</ul>
</body>
</html>
`;
}
