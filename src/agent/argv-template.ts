/**
 * Argv templates (docs/exec.md "Reference agent"): each element of a tool's `command` may hold `{{name}}`
 * placeholders, replaced by the invocation's argument of that name: a string as is, a number or boolean
 * as its JSON text, anything else as JSON. An element that is exactly one placeholder and whose argument
 * is an array becomes one element per item (`["ls", "{{paths}}"]`). The result is an argv for spawn
 * without a shell: an argument can never become a second command, only text inside its own element.
 */
const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}$/;

export class TemplateError extends Error {}

/** The argument names a template uses. */
export function placeholders(template: readonly string[]): string[] {
  return [...new Set(template.flatMap((el) => [...el.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '')))];
}

const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

export function fillArgv(template: readonly string[], args: Record<string, unknown>): string[] {
  const value = (name: string): unknown => {
    if (!Object.hasOwn(args, name) || args[name] === undefined || args[name] === null) {
      throw new TemplateError(`the command needs the argument ${name}, which the invocation does not give`);
    }
    return args[name];
  };
  return template.flatMap((el) => {
    const whole = WHOLE.exec(el);
    if (whole) {
      const v = value(whole[1] ?? '');
      return Array.isArray(v) ? v.map(text) : [text(v)];
    }
    return [el.replace(PLACEHOLDER, (_m, name: string) => text(value(name)))];
  });
}
