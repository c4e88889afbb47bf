/**
 * TOTP (RFC 6238: SHA-1, 6 digits, 30-second steps, what every authenticator app reads from an otpauth
 * URI) through otplib, and the backup codes. A code of the step before or after the current one is
 * accepted (clock drift of a phone); the store then refuses that step and every earlier one
 * (store/identity/identity-store.ts claimTotpStep), so a code is accepted once.
 */
import { randomBytes } from 'node:crypto';
import { generateSecret, generateURI, verifySync } from 'otplib';
import QRCode from 'qrcode';
import { sha256 } from './secrets.js';

export const ISSUER = 'Switchboard';
export const BACKUP_CODE_COUNT = 10;

export const newTotpSecret = (): string => generateSecret();

export const otpauthUri = (secret: string, email: string): string => generateURI({ issuer: ISSUER, label: email, secret });

/** The time step the code belongs to, or null when it matches none of the current step +-1. */
export function totpStep(secret: string, code: string, nowMs: number): number | null {
  if (!/^[0-9]{6}$/.test(code)) return null;
  const result = verifySync({ secret, token: code, epoch: Math.floor(nowMs / 1000), epochTolerance: 30 });
  return result.valid && 'timeStep' in result ? result.timeStep : null;
}

/** The QR code of the otpauth URI as SVG markup (no script, no style: the CSP allows it inline). */
export function qrSvg(uri: string): Promise<string> {
  return QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2, width: 240 });
}

/** Ten codes of 10 base32 characters (50 bits each), shown as xxxxx-xxxxx; stored as SHA-256 only. */
export function newBackupCodes(): string[] {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
  return Array.from({ length: BACKUP_CODE_COUNT }, () => {
    const bytes = randomBytes(10);
    const chars = [...bytes].map((b) => alphabet[b % alphabet.length] ?? 'a').join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** Case, spaces and the dash do not matter when the code is typed back. */
export const backupCodeHash = (code: string): string => sha256(`backup:${code.toLowerCase().replace(/[\s-]/g, '')}`);

export const looksLikeBackupCode = (code: string): boolean => /^[a-z0-9]{5}-?[a-z0-9]{5}$/i.test(code.trim());
