/**
 * The account page's routes (issue 22): `/dashboard/account` and its forms. Every write goes through the
 * session guard (CSRF token, same origin). Turning two-factor on or off, and connecting a provider, are
 * privilege changes: the session gets a new id. A password change ends every session of the user (SPEC
 * Authentication 14), this one included: the user signs in again with the new password.
 */
import type { RouteContext, RouteDef } from '../../http/server.js';
import { ACCOUNT_PATH, LOGIN_PATH } from '../html.js';
import { accountPage, totpSetupPage, type AccountView } from './account-page.js';
import { clientOf, readForm, redirect, sendPage, setSessionCookie, type AuthDeps } from './auth-kit.js';
import type { SignedIn } from './dashboard-route.js';
import { startOidcFlow } from './oidc-flow.js';
import { verifyPassword } from './passwords.js';
import { checkSecondFactor } from './second-factor.js';
import { refusalOf } from './throttle.js';
import { backupCodeHash, newBackupCodes, newTotpSecret, otpauthUri, qrSvg, totpStep } from './totp.js';
import { newPasswordHash, UserAdminError } from './user-admin.js';

/** Associated data of an enrolment in flight: a sealed secret only opens for this user's enrolment. */
const enrolmentOf = (userId: string): string => `totp-enrolment:${userId}`;

/** The account page, shown after each action with what is stored now. */
interface AccountPageKit {
  show(ctx: RouteContext, who: SignedIn, status: number, extra?: Partial<AccountView>): Promise<void>;
  fail(ctx: RouteContext, who: SignedIn, status: number, text: string): Promise<void>;
  /** The same user, a new session id (a privilege change); the page is then shown for the new session. */
  renew(ctx: RouteContext, who: SignedIn): Promise<SignedIn>;
  /** Re-read after a change, so the page shows what is stored. */
  fresh(who: SignedIn): Promise<SignedIn>;
}

function accountPageKit(deps: AuthDeps): AccountPageKit {
  const { users } = deps;
  const view = async (who: SignedIn, extra: Partial<AccountView> = {}): Promise<AccountView> => {
    const [sessions, identities, unusedBackupCodes] = await Promise.all([
      deps.sessions.list(who.user.id),
      users.identitiesOf(who.user.id),
      users.unusedBackupCodes(who.user.id),
    ]);
    return { who, sessions, identities, providers: deps.providers, unusedBackupCodes, ...extra };
  };
  const show = async (ctx: RouteContext, who: SignedIn, status: number, extra: Partial<AccountView> = {}): Promise<void> =>
    sendPage(ctx, deps, status, accountPage(await view(who, extra)));
  const fail = (ctx: RouteContext, who: SignedIn, status: number, text: string): Promise<void> => show(ctx, who, status, { notice: { kind: 'error', text } });
  const renew = async (ctx: RouteContext, who: SignedIn): Promise<SignedIn> => {
    const session = await deps.sessions.start({ userId: who.user.id, stage: 'full', ...clientOf(ctx), nextPath: null, replacing: who.session.id });
    setSessionCookie(ctx, deps.cookies, session);
    return { session, user: who.user, principal: { ...who.principal, csrfToken: session.csrfToken } };
  };
  const fresh = async (who: SignedIn): Promise<SignedIn> => ({ ...who, user: (await users.byId(who.user.id)) ?? who.user });

  return { show, fail, renew, fresh };
}

export function accountRoutes(deps: AuthDeps): RouteDef[] {
  const { users, guard } = deps;
  const kit = accountPageKit(deps);
  const { show, fail } = kit;
  const route = guard.sessionRoute;
  return [
    route('GET', ACCOUNT_PATH, (ctx, who) => show(ctx, who, 200)),
    ...twoFactorRoutes(deps, kit),

    route('POST', `${ACCOUNT_PATH}/sessions/revoke`, async (ctx, who) => {
      const target = (await readForm(ctx)).get('session') ?? '';
      if (!(await deps.sessions.revoke(who.user.id, target))) return fail(ctx, who, 404, 'No such session (it may have ended already).');
      if (target === who.session.record.idHash) {
        setSessionCookie(ctx, deps.cookies, null);
        return redirect(ctx, deps, `${LOGIN_PATH}?signed_out=1`);
      }
      await show(ctx, who, 200, { notice: { kind: 'ok', text: 'The session is ended.' } });
    }),

    route('POST', `${ACCOUNT_PATH}/password`, async (ctx, who) => {
      const form = await readForm(ctx);
      // The current password is a guess like a sign-in's: counted with the account's failed sign-ins (the
      // same counters, before the hash), or a stolen session could try passwords without limit.
      const attempt = await deps.throttles.password.attempt({ account: who.user.email.toLowerCase(), address: ctx.req.clientIp });
      if (attempt.kind !== 'admitted') {
        const refused = refusalOf(ctx, attempt, 'wrong passwords');
        return fail(ctx, who, refused.status, refused.message);
      }
      if (!who.user.passwordHash || !(await verifyPassword(form.get('current') ?? '', who.user.passwordHash))) {
        return fail(ctx, who, 403, 'The current password is wrong.');
      }
      await attempt.succeeded();
      let hash: string;
      try {
        hash = await newPasswordHash(form.get('password') ?? '');
      } catch (err) {
        if (err instanceof UserAdminError) return fail(ctx, who, 400, `The new password ${err.message}.`);
        throw err;
      }
      await users.setPassword(who.user.id, hash, deps.now());
      setSessionCookie(ctx, deps.cookies, null);
      redirect(ctx, deps, `${LOGIN_PATH}?password_changed=1`);
    }),

    route('POST', `${ACCOUNT_PATH}/identities/:provider/connect`, async (ctx, who) => {
      const provider = deps.providers.find((p) => p.id === ctx.req.params.provider);
      if (!provider) return fail(ctx, who, 404, 'No such sign-in provider.');
      if ((await users.identitiesOf(who.user.id)).some((i) => i.providerId === provider.id)) return fail(ctx, who, 409, `${provider.name ?? provider.id} is already connected.`);
      await startOidcFlow(ctx, deps, provider, { connectUserId: who.user.id, next: ACCOUNT_PATH });
    }),

    route('POST', `${ACCOUNT_PATH}/identities/:provider/disconnect`, async (ctx, who) => {
      const id = ctx.req.params.provider ?? '';
      if (!(await users.unlinkIdentity(who.user.id, id))) return fail(ctx, who, 404, 'That provider is not connected.');
      await show(ctx, who, 200, { notice: { kind: 'ok', text: `${id} is disconnected: it no longer signs you in.` } });
    }),
  ];
}

/** Two-factor sign-in: set-up, enabling, new backup codes, disabling. */
function twoFactorRoutes(deps: AuthDeps, { show, fail, renew, fresh }: AccountPageKit): RouteDef[] {
  const { users } = deps;
  const route = deps.guard.sessionRoute;
  return [
    route('GET', `${ACCOUNT_PATH}/totp/setup`, async (ctx, who) => {
      if (who.user.totpSealed !== null) return redirect(ctx, deps, ACCOUNT_PATH);
      const secret = newTotpSecret();
      const uri = otpauthUri(secret, who.user.email);
      sendPage(ctx, deps, 200, totpSetupPage(who, deps.box.seal(secret, enrolmentOf(who.user.id)), secret, uri, await qrSvg(uri), null));
    }),

    route('POST', `${ACCOUNT_PATH}/totp/enable`, async (ctx, who) => {
      if (who.user.totpSealed !== null) return fail(ctx, who, 409, 'Two-factor sign-in is already on.');
      const { box } = deps;
      const form = await readForm(ctx);
      let secret: string;
      try {
        secret = box.open(form.get('enrolment') ?? '', enrolmentOf(who.user.id));
      } catch {
        return fail(ctx, who, 400, 'The set-up form is not valid any more: start the set-up again.');
      }
      const step = totpStep(secret, (form.get('code') ?? '').trim(), deps.now());
      if (step === null) {
        const uri = otpauthUri(secret, who.user.email);
        return sendPage(ctx, deps, 400, totpSetupPage(who, form.get('enrolment') ?? '', secret, uri, await qrSvg(uri), 'That code is wrong or expired: try the current one.'));
      }
      await users.setTotp(who.user.id, box.seal(secret, who.user.id), deps.now());
      await users.claimTotpStep(who.user.id, step);
      const codes = newBackupCodes();
      await users.replaceBackupCodes(who.user.id, codes.map(backupCodeHash));
      await show(ctx, await fresh(await renew(ctx, who)), 200, { notice: { kind: 'ok', text: 'Two-factor sign-in is on.' }, newBackupCodes: codes });
    }),

    route('POST', `${ACCOUNT_PATH}/backup-codes`, async (ctx, who) => {
      const verdict = await checkSecondFactor(ctx, deps, who.user, (await readForm(ctx)).get('code') ?? '', { backupCodes: false });
      if (verdict !== 'ok') return fail(ctx, who, verdict.status, verdict.message);
      const codes = newBackupCodes();
      await users.replaceBackupCodes(who.user.id, codes.map(backupCodeHash));
      await show(ctx, await fresh(who), 200, { notice: { kind: 'ok', text: 'New backup codes made; the previous ones no longer work.' }, newBackupCodes: codes });
    }),

    route('POST', `${ACCOUNT_PATH}/totp/disable`, async (ctx, who) => {
      const verdict = await checkSecondFactor(ctx, deps, who.user, (await readForm(ctx)).get('code') ?? '', { backupCodes: false });
      if (verdict !== 'ok') return fail(ctx, who, verdict.status, verdict.message);
      await users.setTotp(who.user.id, null, deps.now());
      await show(ctx, await fresh(await renew(ctx, who)), 200, { notice: { kind: 'ok', text: 'Two-factor sign-in is off; its secret and every backup code are deleted.' } });
    }),
  ];
}
