import { createRequire } from 'node:module';

/**
 * The one version of profile-edge, read from package.json when this module loads: the OpenAPI document's
 * `info.version`, the MCP server's `serverInfo.version` and the sync user agent all say this, so a release bumps one
 * line.
 */
export const version: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
