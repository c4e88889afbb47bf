/**
 * Path matching for the whole API surface. uWS's own router cannot tell "wrong method" from "no such
 * path", and SPEC wants 405 and 404 in the error envelope, so we match ourselves: `:name` captures one
 * segment, a final `*name` captures the rest (model ids may contain slashes). The most specific route
 * (most literal segments) wins.
 */

export interface RoutePattern<T> {
  readonly method: string;
  readonly pattern: string;
  readonly value: T;
}

interface CompiledRoute<T> {
  readonly method: string;
  readonly literals: (string | null)[];
  readonly names: (string | null)[];
  readonly rest: string | null;
  readonly specificity: number;
  readonly value: T;
}

export type RouteMatch<T> =
  | { readonly kind: 'found'; readonly value: T; readonly params: Readonly<Record<string, string>> }
  | { readonly kind: 'method_not_allowed'; readonly allow: readonly string[] }
  | { readonly kind: 'not_found' };

export interface RouteTable<T> {
  match(method: string, path: string): RouteMatch<T>;
}

function compile<T>(r: RoutePattern<T>): CompiledRoute<T> {
  const segments = r.pattern.split('/').filter(Boolean);
  const last = segments[segments.length - 1];
  const rest = last?.startsWith('*') ? last.slice(1) : null;
  const fixed = rest === null ? segments : segments.slice(0, -1);
  return {
    method: r.method,
    literals: fixed.map((s) => (s.startsWith(':') ? null : s)),
    names: fixed.map((s) => (s.startsWith(':') ? s.slice(1) : null)),
    rest,
    specificity: fixed.filter((s) => !s.startsWith(':')).length,
    value: r.value,
  };
}

function matches(route: CompiledRoute<unknown>, segments: readonly string[]): boolean {
  const n = route.literals.length;
  if (route.rest === null ? segments.length !== n : segments.length <= n) return false;
  for (let i = 0; i < n; i++) {
    const literal = route.literals[i];
    if (literal !== null && literal !== segments[i]) return false;
  }
  return true;
}

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

function extractParams(route: CompiledRoute<unknown>, segments: readonly string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < route.names.length; i++) {
    const name = route.names[i];
    if (name == null) continue;
    const value = decode(segments[i] ?? '');
    if (value === null) return null;
    params[name] = value;
  }
  if (route.rest !== null) {
    const value = decode(segments.slice(route.literals.length).join('/'));
    if (value === null) return null;
    params[route.rest] = value;
  }
  return params;
}

/**
 * Answers are remembered per method and path: a deployment serves a handful of distinct paths, and the
 * split, scan and percent-decoding cost more than the lookup. Bounded by clearing when full, so paths
 * that are never seen again (404 probes) cannot grow it.
 */
const CACHE_MAX = 1024;

export function createRouteTable<T>(routes: readonly RoutePattern<T>[]): RouteTable<T> {
  // Most specific first, so the first match of the right method is the answer.
  const compiled = routes.map(compile).sort((a, b) => b.specificity - a.specificity);
  const cache = new Map<string, RouteMatch<T>>();
  return {
    match(method, path) {
      const key = `${method} ${path}`;
      let found = cache.get(key);
      if (found === undefined) {
        if (cache.size >= CACHE_MAX) cache.clear();
        found = Object.freeze(lookup(method, path));
        cache.set(key, found);
      }
      return found;
    },
  };

  function lookup(method: string, path: string): RouteMatch<T> {
    const segments = path.split('/').filter(Boolean);
    let allow: string[] | null = null;
    let bestSpecificity = -1;
    for (const route of compiled) {
      if (route.specificity < bestSpecificity) break;
      if (!matches(route, segments)) continue;
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        const params = extractParams(route, segments);
        return params ? { kind: 'found', value: route.value, params: Object.freeze(params) } : { kind: 'not_found' };
      }
      bestSpecificity = route.specificity;
      allow ??= [];
      if (!allow.includes(route.method)) allow.push(route.method);
    }
    return allow ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
  }
}
