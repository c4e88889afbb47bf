// Model catalogue for GET /v1/models: a few fixed names plus whatever clients
// have asked for, so a gateway's model discovery finds what tests use.

export const BUILTIN_MODELS: readonly string[] = ['sim-chat', 'sim-reasoner', 'sim-embed'];

// A fixed timestamp keeps /v1/models byte-identical across runs.
const MODEL_CREATED = 1_700_000_000;
const MAX_SEEN = 1000;

export class ModelRegistry {
  private readonly seen = new Set<string>(BUILTIN_MODELS);
  private readonly reasoningNames: ReadonlySet<string>;

  constructor(reasoningModels: readonly string[] = []) {
    this.reasoningNames = new Set(reasoningModels);
  }

  /** Bounded so a client cycling random names cannot grow memory forever. */
  note(model: string): void {
    if (this.seen.size < MAX_SEEN) this.seen.add(model);
  }

  reasons(model: string): boolean {
    if (this.reasoningNames.has(model)) return true;
    const lower = model.toLowerCase();
    return lower.includes('reason') || lower.includes('think');
  }

  list(): { object: 'list'; data: { id: string; object: 'model'; created: number; owned_by: string }[] } {
    return {
      object: 'list',
      data: [...this.seen].map((id) => ({ id, object: 'model' as const, created: MODEL_CREATED, owned_by: 'simulator' })),
    };
  }
}
