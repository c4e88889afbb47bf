/** store/sql/precompiled.ts: a query compiled once answers as the same query compiled per call. */
import { describe, expect, it } from 'vitest';
import { sqlFor } from '../../../../src/store/sql/sql-builder.js';
import { precompiled } from '../../../../src/store/sql/precompiled.js';

type Tables = { t: { a: string; b: string; n: number } };
const { db } = sqlFor<Tables>('postgres');
const build = (a: string, b: string) => db.selectFrom('t').selectAll().where('b', '=', b).where('a', '=', a).limit(3);

describe('precompiled', () => {
  it('binds each call its arguments where the builder put them, and keeps the values the builder wrote', () => {
    const query = precompiled(2, build);
    const once = query('x', 'y').compile();
    const each = build('x', 'y').compile();
    expect(once.sql).toBe(each.sql);
    expect(once.parameters).toEqual(['y', 'x', 3]);
    expect(query('p', 'q').compile().parameters).toEqual(['q', 'p', 3]);
  });

  it('refuses a builder that does not bind an argument as a parameter', () => {
    expect(() => precompiled(1, (a: string) => db.selectFrom('t').selectAll().where('a', '=', a.toUpperCase()))).toThrow(/does not bind/);
  });
});
