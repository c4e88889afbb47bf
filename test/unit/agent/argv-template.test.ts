/** The reference agent's argv templates (src/agent/argv-template.ts): placeholders filled inside their own element, never a shell. */
import { describe, expect, it } from 'vitest';
import { fillArgv, placeholders, TemplateError } from '../../../src/agent/argv-template.js';

describe('argv templates', () => {
  it('fills placeholders with the argument text, inside the element that holds them', () => {
    expect(fillArgv(['printf', '%s', '{{text}}'], { text: 'a b; rm -rf /' })).toEqual(['printf', '%s', 'a b; rm -rf /']);
    expect(fillArgv(['git', 'log', '-n{{count}}', '--', '{{ path }}'], { count: 3, path: 'src' })).toEqual(['git', 'log', '-n3', '--', 'src']);
    expect(fillArgv(['tool', '--flag={{on}}', '{{obj}}'], { on: true, obj: { a: 1 } })).toEqual(['tool', '--flag=true', '{"a":1}']);
  });

  it('expands an array argument to one element per item when the element is only the placeholder', () => {
    expect(fillArgv(['ls', '-1', '{{paths}}'], { paths: ['a', 'b c', 3] })).toEqual(['ls', '-1', 'a', 'b c', '3']);
    expect(fillArgv(['echo', 'x{{paths}}'], { paths: ['a', 'b'] })).toEqual(['echo', 'x["a","b"]']);
  });

  it('refuses a missing argument', () => {
    expect(() => fillArgv(['echo', '{{text}}'], {})).toThrow(TemplateError);
    expect(() => fillArgv(['echo', '{{text}}'], { text: null })).toThrow(/needs the argument text/);
  });

  it('lists the placeholders a template uses', () => {
    expect(placeholders(['a', '{{x}}-{{y}}', '{{x}}'])).toEqual(['x', 'y']);
  });
});
