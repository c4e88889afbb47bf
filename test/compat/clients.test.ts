/**
 * Issue 21: the client libraries people point at an OpenAI-compatible gateway, run through one shared
 * case list (compat-cases.ts) against real gateway and simulator processes. One file for all libraries so
 * they share one simulator and two gateways: on a two-core machine, process start-up is most of the cost.
 * Issue 34 adds the agent clients (Codex CLI, Agents SDK: agent-cases.ts) and the Responses fields they
 * send (responses-fields.ts) on the same processes. README "Tested clients" lists the versions.
 */
import { runAgentCases } from './agent-cases.js';
import { aiSdkClient } from './ai-sdk-client.js';
import { runCompatCases } from './compat-cases.js';
import { useCompatSuite } from './compat-suite.js';
import { langchainClient } from './langchain-client.js';
import { openaiClient } from './openai-client.js';
import { runResponsesFieldCases } from './responses-fields.js';

const suite = useCompatSuite();

for (const client of [openaiClient, aiSdkClient, langchainClient]) runCompatCases(client, suite);
runAgentCases(suite);
runResponsesFieldCases(suite);
