import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project root: where package.json, `data/` and `SKILL.md` live, whatever the working directory. Found by walking
 * up from this module, which runs from `src/` (the sources, under tsx or vitest) or from `dist/src/` (the build).
 */
export const projectRoot: string = (() => {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error('profile-edge: no package.json above its modules');
  }
})();

/**
 * The one version of profile-edge, read from package.json when this module loads: the OpenAPI document's
 * `info.version`, the MCP server's `serverInfo.version` and the sync user agent all say this, so a release bumps one
 * line.
 */
export const version: string = (JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
