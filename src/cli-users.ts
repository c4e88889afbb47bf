/**
 * `switchboard users ...`: create, list, delete, reset-password, against the store a gateway serves (as
 * `switchboard keys`: --config FILE or --db PATH, an existing store only). The first dashboard user is made
 * here. A password is read from standard input (--password-stdin), never from a flag: flags land in shell
 * history and in `ps`.
 *
 * With a config whose `storage.kind` is postgres, the users are PostgreSQL's, shared by every replica.
 */
import { z } from 'zod';
import { ConfigError, type Config } from './config.js';
import { csv, parseCommandLine, parseFlags, UsageError } from './cli-flags.js';
import { storeOf } from './cli-keys.js';
import { withStore, type CliStore } from './cli-keys-store.js';
import type { UsersStore } from './core/store/identity-store.js';
import { createUser, findUser, newPasswordHash, resetPassword, UserAdminError } from './dashboard/auth/user-admin.js';
import { createCatalogStore } from './store/catalog/catalog-store.js';
import { createSqliteCatalog } from './store/catalog/sqlite-catalog.js';
import { openDatabase } from './store/db.js';
import { createIdentityStore } from './store/identity/identity-store.js';
import { createPostgresRunner } from './store/sql/postgres-runner.js';
import { createSqliteRunner } from './store/sql/sqlite-runner.js';
import { withCliPostgres } from './cli-postgres.js';

export const USERS_USAGE = `  switchboard users create --email E --password-stdin --role owner|admin|member --project ID
                           [--name TEXT] [--workspaces ws_a,ws_b] [--config FILE | --db PATH]
  switchboard users grant USER_ID|EMAIL --role owner|admin|member --project ID [--workspaces ws_a,ws_b]
                          (--config FILE | --db PATH)
  switchboard users list (--config FILE | --db PATH) [--json]
  switchboard users delete USER_ID|EMAIL (--config FILE | --db PATH)
  switchboard users reset-password USER_ID|EMAIL --password-stdin (--config FILE | --db PATH)`;

const STORE = { config: { type: 'string' }, db: { type: 'string' } } as const;
const storeSchema = { config: z.string().optional(), db: z.string().optional() };
const roleFlag = z.enum(['owner', 'admin', 'member'], { error: 'is required: owner, admin or member' });
const workspacesFlag = csv.pipe(z.array(z.string().regex(/^ws_[0-9a-f]+$/, 'must be ws_<hex>')).min(1)).optional();

export async function usersCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create':
      return create(rest);
    case 'grant':
      return grant(rest);
    case 'list':
      return list(rest);
    case 'delete':
      return remove(rest);
    case 'reset-password':
      return reset(rest);
    default:
      throw new UsageError(`unknown users command ${JSON.stringify(sub ?? '')}: one of create, grant, list, delete, reset-password`);
  }
}

/** The password: standard input up to the first line end (a trailing newline from `echo` is not part of it). */
async function passwordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('password: ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line === '') throw new UsageError('--password-stdin: standard input is empty; pipe the password in');
  return line;
}

const passwordFlag = z.literal(true, { error: 'is required: the password is read from standard input, never from a flag' });

/** Where the users are, and how a `--project` (and its `--workspaces`) is checked there. */
interface UsersPlace {
  readonly users: UsersStore;
  /** Where, for messages. */
  readonly where: string;
  projectIn(ref: string, workspaces: readonly string[] | undefined): Promise<string>;
}

/**
 * `use` with the users the gateways read: PostgreSQL when the config's storage is (as `switchboard keys`,
 * a --db file is refused there: a user written into it could never sign in), else the SQLite file, an
 * existing one only. `syncFirst`: the config is written into the store first, so its projects exist there.
 */
async function withUsers<T>(
  config: Config | null,
  store: CliStore,
  what: readonly [command: string, verb: string],
  use: (place: UsersPlace) => Promise<T>,
  syncFirst = false,
): Promise<T> {
  if (store.postgres) {
    return withCliPostgres(store.postgres, store.from === '--db', 'dashboard users', what, async (pg, where) => {
      const catalog = createCatalogStore(createPostgresRunner(pg));
      if (syncFirst && config) await catalog.syncConfig(config, Date.now());
      const projectIn = async (ref: string, workspaces: readonly string[] | undefined): Promise<string> => {
        const snapshot = await catalog.loadSnapshot();
        return checkedProject(snapshot.projects, snapshot.workspaces, ref, workspaces, where);
      };
      return use({ users: createIdentityStore(createPostgresRunner(pg)).users, where, projectIn });
    });
  }
  // withStore refuses a path that names no store; the file is then opened for as long as `use` runs.
  withStore(store, what, () => undefined);
  const db = openDatabase(store.path);
  try {
    const catalog = createSqliteCatalog(db);
    if (syncFirst && config) catalog.syncConfig(config, Date.now());
    const projectIn = async (ref: string, workspaces: readonly string[] | undefined): Promise<string> => {
      const snapshot = catalog.snapshot();
      return checkedProject(snapshot.projects, snapshot.workspaces, ref, workspaces, store.path);
    };
    return await use({ users: createIdentityStore(createSqliteRunner(db)).users, where: store.path, projectIn });
  } finally {
    db.close();
  }
}

/** The project (by id or UUID) and the workspaces named, checked against the store's. */
function checkedProject(
  projects: readonly { id: string; uuid: string }[],
  allWorkspaces: readonly { id: string; projectId: string }[],
  ref: string,
  workspaces: readonly string[] | undefined,
  where: string,
): string {
  const project = projects.find((p) => p.id === ref || p.uuid === ref);
  if (!project) throw new ConfigError(`--project: no project ${ref} in ${where}`);
  const known = new Set(allWorkspaces.filter((w) => w.projectId === project.id).map((w) => w.id));
  const unknown = workspaces?.find((w) => !known.has(w));
  if (unknown) throw new ConfigError(`--workspaces: project ${project.id} has no workspace ${unknown}`);
  return project.id;
}

function asConfigError(err: unknown): never {
  if (err instanceof UserAdminError) throw new ConfigError(`--${err.field}: ${err.message}`);
  throw err;
}

async function create(argv: string[]): Promise<void> {
  const flags = parseFlags(
    argv,
    { ...STORE, email: { type: 'string' }, 'password-stdin': { type: 'boolean' }, role: { type: 'string' }, project: { type: 'string' }, name: { type: 'string' }, workspaces: { type: 'string' } },
    z.object({
      ...storeSchema,
      email: z.string({ error: 'is required: the user e-mail' }),
      'password-stdin': passwordFlag,
      role: roleFlag,
      project: z.string({ error: 'is required: the project id (proj_...)' }),
      name: z.string().optional(),
      workspaces: workspacesFlag,
    }),
  );
  const { config, store } = storeOf(flags, 'write the user into');
  const passwordHash = await newPasswordHash(await passwordFromStdin()).catch(asConfigError);
  const user = await withUsers(
    config,
    store,
    ['users create', 'writes into'],
    async ({ users, projectIn: project }) => {
      const projectId = await project(flags.project, flags.workspaces);
      return createUser(users, { email: flags.email, name: flags.name ?? null, passwordHash, role: flags.role, projectId, workspaceIds: flags.workspaces ?? null }, Date.now()).catch(asConfigError);
    },
    true,
  );
  process.stderr.write(`created user ${user.email} (${flags.role} of ${flags.project}); sign in at /dashboard/login\n`);
  process.stdout.write(`${user.id}\n`);
}

/**
 * A role in a project, new or changed (without --workspaces: every workspace). Keys the user owns follow at
 * once: a running gateway reloads credentials when the store changes.
 */
async function grant(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommandLine(
    argv,
    { ...STORE, role: { type: 'string' }, project: { type: 'string' }, workspaces: { type: 'string' } },
    z.object({ ...storeSchema, role: roleFlag, project: z.string({ error: 'is required: the project id (proj_...)' }), workspaces: workspacesFlag }),
    1,
    'user id or e-mail',
  );
  const { config, store } = storeOf(flags, 'write the role into');
  const ref = positionals[0] ?? '';
  const done = await withUsers(config, store, ['users grant', 'writes into'], async ({ users, where, projectIn: project }) => {
    const user = await findUser(users, ref);
    if (!user) throw new ConfigError(`no user ${ref} in ${where}`);
    const projectId = await project(flags.project, flags.workspaces);
    await users.setRole(user.id, { projectId, role: flags.role, workspaceIds: flags.workspaces ?? null });
    return { user, projectId };
  });
  process.stdout.write(`${done.user.email} is ${flags.role} of ${done.projectId}, reading ${flags.workspaces?.join(', ') ?? 'every workspace'}\n`);
}

async function list(argv: string[]): Promise<void> {
  const flags = parseFlags(argv, { ...STORE, json: { type: 'boolean' } }, z.object({ ...storeSchema, json: z.boolean().optional() }));
  const { config, store } = storeOf(flags, 'read the users from');
  const rows = await withUsers(config, store, ['users list', 'reads'], async ({ users }) =>
    Promise.all(
      (await users.list()).map(async (u) => ({
        id: u.id,
        email: u.email,
        name: u.name,
        two_factor: u.totpSealed !== null,
        roles: (await users.roles(u.id)).map((r) => ({ project_id: r.projectId, role: r.role, workspace_ids: r.workspaceIds })),
        created_at: Math.floor(u.createdAt / 1000),
      })),
    ),
  );
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ object: 'list', data: rows }, null, 2)}\n`);
    return;
  }
  const table = [['ID', 'EMAIL', '2FA', 'ROLES'], ...rows.map((r) => [r.id, r.email, r.two_factor ? 'on' : 'off', r.roles.map((x) => `${x.role}@${x.project_id}`).join(',')])];
  const widths = table[0]?.map((_, i) => Math.max(...table.map((r) => (r[i] ?? '').length))) ?? [];
  process.stdout.write(`${table.map((r) => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n')}\n`);
}

async function remove(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommandLine(argv, STORE, z.object(storeSchema), 1, 'user id or e-mail');
  const { config, store } = storeOf(flags, 'delete the user from');
  const ref = positionals[0] ?? '';
  const result = await withUsers(config, store, ['users delete', 'writes into'], async ({ users, where }) => {
    const user = await findUser(users, ref);
    if (!user) throw new ConfigError(`no user ${ref} in ${where}`);
    return { user, ...(await users.delete(user.id, Date.now())) };
  });
  process.stdout.write(`deleted user ${result.user.id} (${result.user.email}); ${result.keysRevoked} API key(s) revoked\n`);
}

async function reset(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommandLine(argv, { ...STORE, 'password-stdin': { type: 'boolean' } }, z.object({ ...storeSchema, 'password-stdin': passwordFlag }), 1, 'user id or e-mail');
  const { config, store } = storeOf(flags, 'write the password into');
  const passwordHash = await newPasswordHash(await passwordFromStdin()).catch(asConfigError);
  const ref = positionals[0] ?? '';
  const user = await withUsers(config, store, ['users reset-password', 'writes into'], async ({ users, where }) => {
    const found = await findUser(users, ref);
    if (!found) throw new ConfigError(`no user ${ref} in ${where}`);
    await resetPassword(users, found, passwordHash, Date.now());
    return found;
  });
  process.stdout.write(`password of ${user.email} reset; every session of the user ended\n`);
}
