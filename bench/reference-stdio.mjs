// The reference for the start-up benchmark: a minimal stdio MCP server written with the SDK (one tool), as a host
// would spawn it. What profile-edge's `mcp` adds to this is its own start-up.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'reference', version: '1.0.0' });
server.registerTool('ping', { description: 'Answers pong.' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
await server.connect(new StdioServerTransport());
