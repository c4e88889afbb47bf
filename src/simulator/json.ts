// Narrowing helpers for request bodies parsed from JSON (typed `unknown`).

export type JsonRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

/** Byte length as a tokenizer would see it; avoids allocating a Buffer. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
