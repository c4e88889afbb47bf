/**
 * Dashboard sign-in for tests, through the real CLI and real HTTP: `switchboard users create` (the
 * password on standard input), then the password form. Returns the session cookie and the page's CSRF token.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { trackChild } from './child-registry.js';
import { CLI } from './processes.js';

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `switchboard <args>` with `stdin` written to its standard input. */
export function runCliWithStdin(args: readonly string[], stdin: string): Promise<CliRun> {
  const proc = trackChild(spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  proc.stdin.end(stdin);
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })));
}

export interface DashboardUser {
  readonly id: string;
  readonly email: string;
  readonly password: string;
}

export async function createDashboardUser(
  dbPath: string,
  opts: { email?: string; password?: string; role?: 'owner' | 'admin' | 'member'; project?: string; workspaces?: readonly string[] } = {},
): Promise<DashboardUser> {
  const email = opts.email ?? `user-${randomBytes(4).toString('hex')}@example.test`;
  const password = opts.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const args = ['users', 'create', '--db', dbPath, '--email', email, '--password-stdin', '--role', opts.role ?? 'owner', '--project', opts.project ?? 'proj_test'];
  if (opts.workspaces) args.push('--workspaces', opts.workspaces.join(','));
  const run = await runCliWithStdin(args, `${password}\n`);
  if (run.code !== 0) throw new Error(`users create failed (${run.code}): ${run.stderr}`);
  return { id: run.stdout.trim(), email, password };
}

export interface DashboardSession {
  /** `name=value`, ready for a Cookie header. */
  readonly cookie: string;
  readonly csrfToken: string;
}

/** The `name=value` of the first Set-Cookie for `prefix` (the session cookie), or null. */
export function sessionCookieOf(res: Response, name = 'switchboard_session'): string | null {
  const line = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  return line ? (line.split(';')[0] ?? null) : null;
}

export const csrfOf = (page: string): string | null => /<meta name="csrf-token" content="([^"]+)">/.exec(page)?.[1] ?? null;

/** POST a form the way a browser does (same origin, form-encoded, no redirects followed). */
export function postForm(url: string, fields: Record<string, string>, cookie?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

export const getPage = (url: string, cookie?: string): Promise<Response> => fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });

/** The password step; for a user without two-factor this signs in. */
export async function signIn(gatewayUrl: string, user: { email: string; password: string }): Promise<DashboardSession> {
  const res = await postForm(`${gatewayUrl}/dashboard/login`, { email: user.email, password: user.password });
  const cookie = sessionCookieOf(res);
  if (res.status !== 303 || !cookie) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const account = await getPage(`${gatewayUrl}/dashboard/account`, cookie);
  const csrfToken = csrfOf(await account.text());
  if (account.status !== 200 || !csrfToken) throw new Error(`signed in, but the account page answered ${account.status}`);
  return { cookie, csrfToken };
}

/** A new owner of proj_test (by default), signed in. */
export async function dashboardSession(
  gateway: { url: string; dbPath: string },
  opts: Parameters<typeof createDashboardUser>[1] = {},
): Promise<DashboardSession & { user: DashboardUser }> {
  const user = await createDashboardUser(gateway.dbPath, opts);
  return { ...(await signIn(gateway.url, user)), user };
}
