/**
 * Checking a second-factor code (SPEC Authentication 13): a TOTP code (each accepted once), or where
 * allowed a backup code (each usable once). Failures are throttled per account and per address, so the
 * million TOTP codes cannot be walked through; each attempt is counted before the code is checked
 * (throttle.ts), so concurrent codes cannot all pass the throttle either.
 */
import type { RouteContext } from '../../http/server.js';
import type { UserRecord } from '../../core/store/identity-store.js';
import type { AuthDeps } from './auth-kit.js';
import { refusalOf } from './throttle.js';
import { backupCodeHash, looksLikeBackupCode, totpStep } from './totp.js';

export type Verdict = 'ok' | { readonly status: number; readonly message: string };

export async function checkSecondFactor(ctx: RouteContext, deps: AuthDeps, user: UserRecord, rawCode: string, opts: { backupCodes: boolean }): Promise<Verdict> {
  const code = rawCode.trim().replace(/\s/g, '');
  const attempt = await deps.throttles.secondFactor.attempt({ account: user.id, address: ctx.req.clientIp });
  if (attempt.kind !== 'admitted') return refusalOf(ctx, attempt, 'wrong codes');
  if (await accepted(deps, user, code, opts.backupCodes)) {
    await attempt.succeeded();
    return 'ok';
  }
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
