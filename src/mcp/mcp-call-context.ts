/**
 * Who is calling, for the tool handlers: the key the HTTP request carrying the JSON-RPC message was
 * authenticated with (every request is, not only `initialize`), the workspace that request names, and its
 * abort. Handed through the SDK as `authInfo.extra`, the one channel it offers from `handleRequest` to a
 * handler; a class, so a handler reads it back by `instanceof`, with its type.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { AuthenticatedKey } from '../core/auth/authenticate.js';

const SLOT = 'switchboard';

export class McpCallContext {
  constructor(
    readonly auth: AuthenticatedKey,
    readonly workspaceId: string,
    /** The HTTP request's abort: a tool still waiting for its invocation cancels it. */
    readonly signal: AbortSignal,
  ) {}

  get projectId(): string {
    return this.auth.project.id;
  }

  /** The SDK's AuthInfo for this request; `token` is the key's id, never its value. */
  toAuthInfo(): AuthInfo {
    return { token: this.auth.key.id, clientId: this.auth.key.id, scopes: [...this.auth.key.scopes], extra: { [SLOT]: this } };
  }

  static of(authInfo: AuthInfo | undefined): McpCallContext {
    const ctx = authInfo?.extra?.[SLOT];
    // Every request reaches the SDK through routes/mcp.ts, which sets it; its absence is a bug.
    if (!(ctx instanceof McpCallContext)) throw new Error('MCP request without its call context');
    return ctx;
  }
}
