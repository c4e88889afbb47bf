/**
 * Moves inline `<think>...</think>` text out of `content` (X-Service-Augment-Reasoning-Normalization),
 * for upstreams that run without a reasoning parser. Streaming-safe: a tag split across deltas
 * ("<thi" + "nk>") is held back until it can be decided, so no fragment of a tag leaks into either channel.
 */

const OPEN = '<think>';
const CLOSE = '</think>';

export interface SplitText {
  readonly reasoning: string;
  readonly content: string;
}

export class ThinkSplitter {
  #inThink = false;
  #pending = '';
  #seenContent = false;

  push(text: string): SplitText {
    let input = this.#pending + text;
    this.#pending = '';
    let reasoning = '';
    let content = '';
    while (input.length > 0) {
      const tag = this.#inThink ? CLOSE : OPEN;
      const at = input.indexOf(tag);
      if (at !== -1) {
        const before = input.slice(0, at);
        if (this.#inThink) reasoning += before;
        else content += before;
        this.#inThink = !this.#inThink;
        input = input.slice(at + tag.length);
        continue;
      }
      const hold = partialTagSuffix(input, tag);
      const emit = input.slice(0, input.length - hold);
      if (this.#inThink) reasoning += emit;
      else content += emit;
      this.#pending = input.slice(input.length - hold);
      break;
    }
    // The answer conventionally starts after a newline or two that closed the think block.
    if (!this.#seenContent && content) {
      content = content.replace(/^\s+/, '');
      if (content) this.#seenContent = true;
    }
    return { reasoning, content };
  }

  /** At end of stream, a held-back fragment that never became a tag is ordinary text. */
  flush(): SplitText {
    const rest = this.#pending;
    this.#pending = '';
    return this.#inThink ? { reasoning: rest, content: '' } : { reasoning: '', content: rest };
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagSuffix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/** Whole-text form for non-streaming responses. */
export function splitThink(text: string): SplitText {
  const splitter = new ThinkSplitter();
  const a = splitter.push(text);
  const b = splitter.flush();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content };
}
