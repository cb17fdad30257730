import { z } from 'zod';
import { ProfileRef } from './Directory.js';

export const ToolName = z.enum(['profile_list_channels', 'profile_quote', 'profile_query']);
export type ToolName = z.infer<typeof ToolName>;

export const McpManifest = z
  .object({
    protocol: z.literal('mcp'),
    profile: ProfileRef,
    tools: z.array(
      z
        .object({ name: ToolName, description: z.string(), inputSchema: z.record(z.unknown()).optional() })
        .strict(),
    ),
    skill: z.literal('/SKILL.md'),
  })
  .strict();
export type McpManifest = z.infer<typeof McpManifest>;

const JsonRpcId = z.union([z.string(), z.number().int(), z.null()]);

/** The JSON-RPC envelope stays tolerant: clients send extra fields. */
export const McpRequest = z
  .object({
    jsonrpc: z.string().optional(),
    id: JsonRpcId.optional(),
    method: z.string().optional(),
    params: z.record(z.unknown()).optional(),
    tool: z.string().optional(),
    arguments: z.record(z.unknown()).optional(),
  })
  .passthrough();
export type McpRequest = z.infer<typeof McpRequest>;

export const McpResponse = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: JsonRpcId,
    result: z.unknown().optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.record(z.unknown()) }).passthrough().optional(),
  })
  .passthrough();
export type McpResponse = z.infer<typeof McpResponse>;
