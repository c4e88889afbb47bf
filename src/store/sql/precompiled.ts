/**
 * A query compiled once, its arguments bound per call: for the few statements on the request path, where
 * compiling each time (~15-20 us) would cost more than running them (a primary-key SELECT on SQLite). The
 * query is built once with a marker for each argument; every bound parameter that is a marker takes the
 * call's argument, any other (a LIMIT the builder wrote) stays as compiled. So `build` must pass each
 * argument to the builder as a plain value, never compute with it.
 */
import type { Compilable, CompiledQuery } from 'kysely';

const marker = (i: number): string => `\u0000precompiled-argument-${i}`;

export function precompiled<A extends readonly unknown[], R>(arity: A['length'], build: (...args: A) => Compilable<R>): (...args: A) => Compilable<R> {
  const markers = Array.from({ length: arity }, (_, i) => marker(i));
  const compiled: CompiledQuery<R> = build(...(markers as unknown as A)).compile();
  const slots = compiled.parameters.map((p) => (typeof p === 'string' ? markers.indexOf(p) : -1));
  if (markers.some((_, i) => !slots.includes(i))) throw new Error(`precompiled query does not bind each of its ${arity} arguments as a parameter: ${compiled.sql}`);
  return (...args) => ({ compile: () => ({ ...compiled, parameters: slots.map((slot, i) => (slot === -1 ? compiled.parameters[i] : args[slot])) }) });
}
