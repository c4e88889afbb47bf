/**
 * Today's OpenAI agent clients, unchanged (issue 34), on the compatibility suite's gateway: the Codex CLI
 * and the Agents SDK each complete a tool-using task with the simulator answering. Before the gateway
 * accepted the fields these clients send, Codex's first request was refused (400 on `include`, then
 * `prompt_cache_key`, `client_metadata` and its `namespace` tool) and every Agents SDK request on the
 * Responses API was refused on `include: []`.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ROUTER_PROJECT } from '../helpers/router-config.js';
import { simRequests, type SimRequest } from '../helpers/simulator-log.js';
import { runAgent, type AgentsApi } from './agents-sdk.js';
import { runCodex } from './codex-cli.js';
import type { CompatSuite } from './compat-suite.js';

interface ChatTurn {
  readonly messages: readonly { readonly role: string; readonly content: unknown; readonly tool_call_id?: string }[];
  readonly tools?: readonly { readonly function: { readonly name: string } }[];
  readonly prompt_cache_key?: string;
}

/** The model turns that carried `nonce`, oldest first, as the simulator received them. */
async function turnsWith(suite: CompatSuite, nonce: string): Promise<ChatTurn[]> {
  const all: SimRequest[] = await simRequests(suite.sim.url, 50);
  return all
    .filter((r) => r.path === '/v1/chat/completions' && r.body.includes(nonce))
    .reverse()
    .map((r) => JSON.parse(r.body) as ChatTurn);
}

function nonce(): string {
  return randomBytes(6).toString('hex');
}

/**
 * Codex's prompt (instructions, environment, ~20 function tools) is about 10k tokens: the router
 * project's `chat` endpoint (model-chat, 32k context) serves it, by slug, by model name and when routed.
 */
const CODEX_BASES: readonly { readonly kind: string; readonly path: string }[] = [
  { kind: 'direct', path: `/${ROUTER_PROJECT}/chat/v1` },
  { kind: 'model-addressed', path: `/${ROUTER_PROJECT}/v1` },
  { kind: 'routed', path: `/${ROUTER_PROJECT}/_semantic/router/v1` },
];

export function runAgentCases(suite: CompatSuite): void {
  describe('OpenAI Codex CLI 0.171 (wire_api = "responses")', () => {
    for (const base of CODEX_BASES) {
      it(`runs the shell command the model calls for and finishes the task, on the ${base.kind} base URL, with nothing leaving the machine`, async () => {
        const n = nonce();
        const run = await runCodex({
          baseURL: `${suite.gw.url}${base.path}`,
          apiKey: suite.routerKeys.full,
          model: 'model-chat',
          prompt: `Print the greeting. [call: exec_command {"cmd":"echo codex-${n}"}]`,
        });
        expect(run.exitCode, run.stderr.slice(-2000)).toBe(0);
        const items = run.events.filter((e) => e.type === 'item.completed').map((e) => e.item as Record<string, unknown>);
        expect(items.find((i) => i.type === 'command_execution')).toMatchObject({ aggregated_output: `codex-${n}\n`, exit_code: 0, status: 'completed' });
        expect(String(items.find((i) => i.type === 'agent_message')?.text)).toMatch(/^Tool result received:/);
        expect(run.outbound).toEqual([]);
        // Two model turns: the call, then the answer to the command's own output.
        const turns = await turnsWith(suite, n);
        expect(turns).toHaveLength(2);
        const [first, second] = turns as [ChatTurn, ChatTurn];
        // The namespace tool Codex sends by default is offered as its functions, beside Codex's own.
        const names = (first.tools ?? []).map((t) => t.function.name);
        expect(names).toContain('exec_command');
        expect(names).toContain('close_agent');
        // The thread id Codex sends as prompt_cache_key reaches the model server, which may use it.
        expect(typeof first.prompt_cache_key).toBe('string');
        const last = second.messages.at(-1);
        expect(last?.role).toBe('tool');
        expect(JSON.stringify(last?.content)).toContain(`codex-${n}`);
      });
    }
  });

  describe('OpenAI Agents SDK 0.20 with tracing off', () => {
    const modes: readonly { readonly api: AgentsApi; readonly stream: boolean }[] = [
      { api: 'responses', stream: false },
      { api: 'responses', stream: true },
      { api: 'chat_completions', stream: false },
      { api: 'chat_completions', stream: true },
    ];
    for (const mode of modes) {
      it(`runs an agent whose tool the model calls to its final output, on ${mode.api}${mode.stream ? ', streamed' : ''}`, async () => {
        const n = nonce();
        const result = await runAgent({ baseURL: suite.chatBase, apiKey: suite.keys.full, model: 'model-chat', ...mode, prompt: `What is the weather in Paris? ${n}`, forecast: `sunny-${n}` });
        expect(result.toolInputs).toEqual([{ city: 'sample', unit: 'celsius' }]);
        expect(result.finalOutput).toMatch(/^Tool result received:/);
        const path = mode.api === 'responses' ? '/responses' : '/chat/completions';
        expect(result.fetched).toEqual([`${suite.chatBase}${path}`, `${suite.chatBase}${path}`]);
        const turns = await turnsWith(suite, n);
        expect(turns).toHaveLength(2);
        expect(JSON.stringify(turns[1]?.messages.at(-1))).toContain(`sunny-${n}`);
      });
    }
  });
}
