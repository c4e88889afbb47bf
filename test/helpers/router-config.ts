/**
 * The semantic router's test project, added to the usual test config (testConfig's `extraProjects`):
 * three generative endpoints with distinct profiles in one workspace (math, chat, vision), a suspended one,
 * a one-endpoint workspace, a concrete-mode workspace, an operational one, an empty one, and the simulator's
 * embedding endpoint. Profiles use words the simulator's bag-of-words embeddings keep apart.
 */
import { makeKeys, testConfig, type ConfigOverrides } from './configs.js';
import { mintTestKey, startGatewayProcess, startSimulatorProcess, type GatewayProcess, type SimulatorProcess } from './processes.js';
import { useProcesses } from './suite.js';

export const ROUTER_PROJECT = 'proj_router';
export const WS_MAIN = 'ws_a1a1a1';
export const WS_SOLO = 'ws_b2b2b2';
export const WS_CONCRETE = 'ws_c3c3c3';
export const WS_OPS = 'ws_d4d4d4';
/** A workspace no generative endpoint serves. */
export const WS_EMPTY = 'ws_e5e5e5';
export const R_MATH = 'a0000000-0000-4000-8000-000000000001';
export const R_CHAT = 'a0000000-0000-4000-8000-000000000002';
export const R_VISION = 'a0000000-0000-4000-8000-000000000003';
export const R_PAUSED = 'a0000000-0000-4000-8000-000000000004';
export const R_SOLO = 'a0000000-0000-4000-8000-000000000005';
export const R_EMBED = 'a0000000-0000-4000-8000-000000000006';

export interface RouterKeys {
  readonly full: string;
  readonly inferenceOnly: string;
  readonly managementOnly: string;
  /** inference + research: may send x_research_run. */
  readonly research: string;
}

export function makeRouterKeys(): RouterKeys {
  return { full: mintTestKey('router'), inferenceOnly: mintTestKey('router'), managementOnly: mintTestKey('router'), research: mintTestKey('router') };
}

function chatEndpoint(id: string, slug: string, upstream: string, extra: Record<string, unknown>) {
  return {
    id,
    slug,
    name: `Router ${slug}`,
    kind: 'chat',
    tier: 'gpu',
    workspaces: [WS_MAIN, WS_CONCRETE],
    model: { id: `model-${slug}`, context_window: 8192, capabilities: ['tools'] },
    upstream: { base_url: upstream, model: 'sim-chat' },
    ...extra,
  };
}

export function routerProject(upstream: string, keys: RouterKeys) {
  return {
    id: ROUTER_PROJECT,
    slug: 'router',
    default_workspace: WS_MAIN,
    workspaces: [
      { id: WS_MAIN, name: 'Main' },
      { id: WS_SOLO, name: 'Solo' },
      { id: WS_CONCRETE, name: 'Concrete', routing_mode: 'concrete' },
      { id: WS_OPS, name: 'Operations', operational: true },
      { id: WS_EMPTY, name: 'Empty' },
    ],
    endpoints: [
      chatEndpoint(R_MATH, 'math', upstream, {
        router: {
          description: 'Mathematics: algebra, calculus, derivatives, integrals and equations',
          examples: ['compute the derivative of sin x', 'what is the integral of x squared', 'solve the equation 2x + 3 = 7'],
        },
      }),
      chatEndpoint(R_CHAT, 'chat', upstream, {
        region: 'far-away',
        model: { id: 'model-chat', context_window: 32768, capabilities: ['tools', 'structured_output'] },
        router: { description: 'Casual conversation: greetings, recipes, cooking and travel plans', examples: ['recommend a recipe for dinner tonight', 'plan a weekend trip to lisbon'] },
      }),
      chatEndpoint(R_VISION, 'vision', upstream, {
        workspaces: [WS_MAIN],
        model: { id: 'model-vision', context_window: 8192, capabilities: ['vision'] },
        router: { description: 'Describe photos, pictures and images', examples: ['describe this photo', 'what is in this picture'] },
      }),
      chatEndpoint(R_PAUSED, 'paused', upstream, { status: 'suspended', workspaces: [WS_MAIN], router: { description: 'Poetry and sonnets', examples: [] } }),
      chatEndpoint(R_SOLO, 'solo', upstream, { workspaces: [WS_SOLO, WS_OPS] }),
      { id: R_EMBED, slug: 'embed', name: 'Embeddings', kind: 'embedding', tier: 'cpu', model: { id: 'sim-embed', context_window: 8192 }, upstream: { base_url: upstream, model: 'sim-embed' } },
    ],
    keys: [
      { value: keys.full, scopes: ['inference', 'management'] },
      { value: keys.inferenceOnly, scopes: ['inference'] },
      { value: keys.managementOnly, scopes: ['management'] },
      { value: keys.research, scopes: ['inference', 'research'] },
    ],
  };
}

export interface RouterSuite {
  readonly sim: SimulatorProcess;
  readonly gw: GatewayProcess;
  readonly keys: RouterKeys;
  /** `${gw.url}/${ROUTER_PROJECT}` */
  readonly base: string;
}

/** A simulator and a gateway whose config holds the usual test projects plus the router project. */
export function useRouterSuite(overrides: ConfigOverrides = {}): RouterSuite {
  return useProcesses(async () => {
    const keys = makeRouterKeys();
    const sim = await startSimulatorProcess();
    const config = testConfig(sim.url, makeKeys(), { ...overrides, extraProjects: [routerProject(sim.url, keys), ...(overrides.extraProjects ?? [])] });
    const gw = await startGatewayProcess(config);
    return { sim, gw, keys, base: `${gw.url}/${ROUTER_PROJECT}` };
  });
}
