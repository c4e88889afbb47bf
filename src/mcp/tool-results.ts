/**
 * How the gateway's answers and refusals become MCP tool results (docs/mcp.md "Results and errors").
 * A tool's outcome is a result: `structuredContent` is the same object the REST route answers with, and a
 * text block carries its JSON for clients that read only text (MCP "Structured Content"). A refusal of the
 * call (bad arguments, an unknown invocation, a decided approval...) is a result with `isError: true` and
 * the gateway's error envelope, so a model can read why and correct itself (MCP "Error Handling": tool
 * execution errors). Only a tool name this server does not offer is a JSON-RPC error (-32602), with the
 * envelope as its `data`, as MCP treats unknown tools as protocol errors.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError, toGatewayError } from '../errors.js';

export function jsonResult(value: Record<string, unknown>, isError = false, text = JSON.stringify(value)): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: value, isError };
}

export function refusalResult(err: unknown): CallToolResult {
  const e = toGatewayError(err);
  return jsonResult(e.toEnvelope(), true);
}

export function unknownToolError(err: GatewayError): McpError {
  return new McpError(ErrorCode.InvalidParams, err.message, err.toEnvelope());
}
