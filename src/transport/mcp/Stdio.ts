import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Services } from '../../Services.js';
import type { Binding } from '../../../tools/Tools.js';
import * as McpServer from './McpServer.js';

/**
 * Serves MCP over stdin/stdout for a local host. The process acts with the credentials configured for it
 * (PROFILE_EDGE_API_KEY, PROFILE_EDGE_BEARER_TOKEN), checked on every call like any other transport's.
 */
export async function serve(services: Services, binding: Binding): Promise<void> {
  const { apiKey, bearerToken } = services.config.stdioCredentials;
  const server = McpServer.create({ services, binding, presented: { apiKey, bearerToken, origin: 'stdio' } });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await McpServer.connect(server, transport);
  services.logger.info('mcp stdio ready', { binding: binding.kind === 'profile' ? binding.slug : 'global' });
  await closed;
  await server.close();
}
