/**
 * Every code in the error catalogue is produced by some behaviour test, as fastify checks of its errors: a
 * code no test reaches is a refusal nobody has seen work (issue 17 found five). Reading the test sources
 * is the check: a code must appear quoted, as an expectation, in a test outside the catalogue's own.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors.js';

/** Codes that nothing can produce yet, each with what will. Keep this list short and honest. */
const EXEC = 'the execution surface (issue 13, docs/exec.md)';
const NOT_PRODUCED_YET: Partial<Record<ErrorCode, string>> = {
  already_terminal: EXEC,
  insufficient_quota: 'billing: no credit system exists',
  billing_delinquent: 'billing: no credit system exists',
  cross_project_access: EXEC,
  workspace_lookup_failed: 'workspace resolution is in memory and cannot fail transiently until a network store (issue 12)',
  retriever_failed: 'no retrieval backend exists yet',
};

function testSources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testSources(path);
    return path.endsWith('.ts') && !/errors?(-coverage)?\.test\.ts$/.test(name) ? [readFileSync(path, 'utf8')] : [];
  });
}

const sources = testSources(join(process.cwd(), 'test')).join('\n');
const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

describe('error catalogue coverage', () => {
  it.each(CODES.filter((c) => !(c in NOT_PRODUCED_YET)))('has a behaviour test that produces %s', (code) => {
    expect(sources.includes(`'${code}'`) || sources.includes(`"${code}"`)).toBe(true);
  });

  it.each(Object.keys(NOT_PRODUCED_YET))('lists %s as not produced yet only while no test produces it', (code) => {
    expect(sources.includes(`'${code}'`) || sources.includes(`"${code}"`)).toBe(false);
  });
});
