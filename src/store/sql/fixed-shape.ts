/**
 * A statement whose text never changes, only its values (an insert or update of a whole row): built and
 * compiled once, then each call binds its values into the compiled parameters. Building and compiling a
 * 22-column insert with Kysely costs ~35 us on an idle core (over 0.5 ms on the loaded 2-core test
 * machine), several times the statement itself; the exec invocations' create and claim (one per
 * request) pay it on every call otherwise.
 *
 * The query is built once with a slot object in place of each value: every value must be bound as a
 * parameter (a `where`, `values` or `set` value; not `sql.lit`, not a value the builder inspects, such as
 * null for `is`), and every call must pass the same keys.
 */
import type { Compilable, CompiledQuery } from 'kysely';

class Slot {
  constructor(readonly name: string) {}
}

export function fixedShape<V extends Record<string, unknown>, R>(build: (values: V) => Compilable<R>): (values: V) => Compilable<R> {
  let compiled: CompiledQuery<R> | null = null;
  return (values) => ({
    compile() {
      compiled ??= build(Object.fromEntries(Object.keys(values).map((name) => [name, new Slot(name)])) as V).compile();
      return { ...compiled, parameters: compiled.parameters.map((p) => (p instanceof Slot ? values[p.name] : p)) };
    },
  });
}
