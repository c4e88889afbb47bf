/**
 * OpenID Connect sign-in with openid-client (v6): authorization code flow with PKCE (S256), `state` and
 * `nonce` (SPEC "Dashboard authentication routes", Authentication 12). The flow in flight is a row keyed by
 * the hash of a random id kept in an HttpOnly cookie for 10 minutes, holding the state, nonce and PKCE
 * verifier: the callback is accepted only in the browser that started it, once, and openid-client checks the
 * returned `state` and the ID token's `nonce` against that row.
 */
import * as oidc from 'openid-client';
import type { RouteContext } from '../../http/server.js';
import { redirect, type AuthDeps } from './auth-kit.js';
import type { OidcProviderConfig } from '../../config/dashboard.js';
import { setCookie } from './cookies.js';
import { randomId, sha256 } from './secrets.js';

export const FLOW_MS = 10 * 60_000;

const configurations = new Map<string, Promise<oidc.Configuration>>();

function clientSecret(p: OidcProviderConfig): string | undefined {
  if (p.client_secret !== undefined) return p.client_secret;
  if (p.client_secret_env !== undefined) return process.env[p.client_secret_env];
  return undefined;
}

/** Discovery once per provider; a failed discovery is forgotten so the next sign-in tries again. */
export function providerConfiguration(p: OidcProviderConfig): Promise<oidc.Configuration> {
  const cached = configurations.get(p.id);
  if (cached) return cached;
  const secret = clientSecret(p);
  const found = oidc.discovery(
    new URL(p.issuer),
    p.client_id,
    undefined,
    secret !== undefined ? oidc.ClientSecretPost(secret) : oidc.None(),
    p.allow_insecure_issuer ? { execute: [oidc.allowInsecureRequests] } : undefined,
  );
  configurations.set(p.id, found);
  found.catch(() => configurations.delete(p.id));
  return found;
}

export const callbackUri = (ctx: RouteContext, deps: AuthDeps, p: OidcProviderConfig): string => `${deps.originOf(ctx)}/auth/${p.id}/callback`;

/** Stores the flow, sets its cookie and sends the browser to the provider. */
export async function startOidcFlow(
  ctx: RouteContext,
  deps: AuthDeps,
  provider: OidcProviderConfig,
  opts: { connectUserId: string | null; next: string | null },
): Promise<void> {
  const configuration = await providerConfiguration(provider);
  const id = randomId();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const codeVerifier = oidc.randomPKCECodeVerifier();
  await deps.sessionsRepo.insertFlow({
    idHash: sha256(id),
    providerId: provider.id,
    state,
    nonce,
    codeVerifier,
    connectUserId: opts.connectUserId,
    nextPath: opts.next,
    createdAt: deps.now(),
  });
  const url = oidc.buildAuthorizationUrl(configuration, {
    redirect_uri: callbackUri(ctx, deps, provider),
    scope: provider.scopes.join(' '),
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  });
  ctx.reply.setHeader('Set-Cookie', setCookie(deps.cookies.oidcFlow, id, deps.cookies.secure, FLOW_MS / 1000));
  redirect(ctx, deps, url.href);
}

export interface OidcIdentity {
  readonly subject: string;
  readonly email: string | null;
  readonly emailVerified: boolean;
  readonly name: string | null;
}

/** The code exchange and ID token checks (state, nonce, PKCE, issuer, audience, signature). Throws when any fails. */
export async function finishOidcFlow(
  ctx: RouteContext,
  deps: AuthDeps,
  provider: OidcProviderConfig,
  flow: { state: string; nonce: string; codeVerifier: string },
): Promise<OidcIdentity> {
  const configuration = await providerConfiguration(provider);
  const current = new URL(callbackUri(ctx, deps, provider));
  current.search = ctx.req.query;
  const tokens = await oidc.authorizationCodeGrant(configuration, current, {
    pkceCodeVerifier: flow.codeVerifier,
    expectedState: flow.state,
    expectedNonce: flow.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims) throw new Error('the provider returned no ID token');
  // Many providers put e-mail and name only in the UserInfo answer (OIDC Core 5.4), for the same subject.
  const profile = typeof claims.email === 'string' ? claims : await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub);
  const email = typeof profile.email === 'string' ? profile.email.toLowerCase() : null;
  return {
    subject: claims.sub,
    email,
    emailVerified: profile.email_verified === true,
    name: typeof profile.name === 'string' ? profile.name : null,
  };
}
