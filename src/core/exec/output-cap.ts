/**
 * An invocation's output, kept up to `exec.output_cap_bytes` UTF-8 bytes (docs/exec.md: capped, with
 * `output_truncated`). The cut falls between characters, never inside one, so the kept text is valid.
 */

export interface CappedOutput {
  readonly text: string;
  readonly bytes: number;
  readonly truncated: boolean;
}

export const EMPTY_OUTPUT: CappedOutput = { text: '', bytes: 0, truncated: false };

/** Appends `chunk`; `added` is the part kept (what a live reader is sent). */
export function appendOutput(current: CappedOutput, chunk: string, capBytes: number): { output: CappedOutput; added: string } {
  if (chunk === '') return { output: current, added: '' };
  if (current.truncated) return { output: current, added: '' };
  const room = capBytes - current.bytes;
  const size = Buffer.byteLength(chunk, 'utf8');
  if (size <= room) return { output: { text: current.text + chunk, bytes: current.bytes + size, truncated: false }, added: chunk };
  let kept = 0;
  let end = 0;
  for (const ch of chunk) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (kept + n > room) break;
    kept += n;
    end += ch.length;
  }
  const added = chunk.slice(0, end);
  return { output: { text: current.text + added, bytes: current.bytes + kept, truncated: true }, added };
}

export function cappedOf(text: string, truncated: boolean): CappedOutput {
  return { text, bytes: Buffer.byteLength(text, 'utf8'), truncated };
}
