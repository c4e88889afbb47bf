/** JSON text columns: lists and nested config objects that are always read and written whole. */
export function toJson(value: unknown): string {
  return JSON.stringify(value);
}

export function fromJson<T>(text: string): T {
  return JSON.parse(text) as T;
}

export function fromNullableJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}
