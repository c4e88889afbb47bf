/** Reads a whole SSE response into its events, for assertions on order and shape. */

export interface SseFrame {
  readonly event: string | null;
  readonly data: string;
}

export function parseSse(text: string): SseFrame[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      return { event, data: data.join('\n') };
    });
}

/** The JSON chunks of a stream, without the final [DONE]. */
export function chunksOf(frames: readonly SseFrame[]): Record<string, unknown>[] {
  return frames.filter((f) => f.data !== '[DONE]' && f.event === null).map((f) => JSON.parse(f.data) as Record<string, unknown>);
}
