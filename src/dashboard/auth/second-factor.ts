/**
 * Checking a second-factor code (SPEC Authentication 13): a TOTP code (each accepted once), or where
 * allowed a backup code (each usable once). Failures are throttled per account and per address, so the
 * million TOTP codes cannot be walked through.
 */
import type { RouteContext } from '../../http/server.js';
import type { UserRecord } from '../../core/store/identity-store.js';
import { minutes, type AuthDeps } from './auth-kit.js';
import { backupCodeHash, looksLikeBackupCode, totpStep } from './totp.js';

export type Verdict = 'ok' | { readonly status: number; readonly message: string };

export async function checkSecondFactor(ctx: RouteContext, deps: AuthDeps, user: UserRecord, rawCode: string, opts: { backupCodes: boolean }): Promise<Verdict> {
  const code = rawCode.trim().replace(/\s/g, '');
  const { secondFactor } = deps.throttles;
  const byAccount = `account:${user.id}`;
  const byAddress = `address:${ctx.req.clientIp}`;
  const wait = Math.max(secondFactor.waitMs(byAccount), secondFactor.waitMs(byAddress));
  if (wait > 0) {
    ctx.reply.setHeader('Retry-After', String(Math.ceil(wait / 1000)));
    return { status: 429, message: `Too many wrong codes: try again in ${minutes(wait)} minutes.` };
  }
  if (await accepted(deps, user, code, opts.backupCodes)) {
    secondFactor.reset(byAccount);
    return 'ok';
  }
  secondFactor.fail(byAccount);
  secondFactor.fail(byAddress);
  return { status: 401, message: opts.backupCodes ? 'That code is wrong, expired or already used.' : 'That authenticator code is wrong, expired or already used.' };
}

async function accepted(deps: AuthDeps, user: UserRecord, code: string, backupCodes: boolean): Promise<boolean> {
  if (user.totpSealed === null) return false;
  if (/^[0-9]{6}$/.test(code)) {
    const secret = deps.box.open(user.totpSealed, user.id);
    const step = totpStep(secret, code, deps.now());
    return step !== null && (await deps.users.claimTotpStep(user.id, step));
  }
  return backupCodes && looksLikeBackupCode(code) && (await deps.users.useBackupCode(user.id, backupCodeHash(code), deps.now()));
}
