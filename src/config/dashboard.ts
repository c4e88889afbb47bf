/**
 * The `dashboard:` section of the config file (issue 22): where the dashboard is reached from, and the
 * OpenID Connect providers users may sign in with (SPEC Authentication 12).
 */
import { z } from 'zod';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const oidcProviderSchema = z
  .strictObject({
    /** The path segment of `/auth/{provider}`. */
    id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, 'must be lowercase letters, digits, dashes or underscores (at most 40)'),
    /** Shown on the sign-in button. */
    name: z.string().min(1).optional(),
    issuer: z.url(),
    client_id: z.string().min(1),
    client_secret: z.string().min(1).optional(),
    client_secret_env: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    scopes: z.array(z.string().min(1)).default(['openid', 'email', 'profile']),
    /** An identity no user has connected signs up a new user (a member of no project) instead of being refused. */
    allow_signup: z.boolean().default(false),
    /**
     * An http:// issuer (a development or test identity provider). openid-client refuses plain HTTP unless
     * told; this is the only way to tell it, and it is refused with server.production: true.
     */
    allow_insecure_issuer: z.boolean().default(false),
  })
  .refine((p) => !(p.client_secret && p.client_secret_env), { message: 'give client_secret or client_secret_env, not both', path: ['client_secret'] });

export const dashboardSchema = z.strictObject({
  /**
   * The origin browsers reach the dashboard at (`https://switchboard.example.com`): the base of OIDC
   * redirect URIs and the one origin accepted on dashboard writes. Unset: taken from the request's Host.
   */
  public_url: z.url().optional(),
  oidc_providers: z.array(oidcProviderSchema).default([]),
});

export type DashboardConfig = z.infer<typeof dashboardSchema>;
export type OidcProviderConfig = z.infer<typeof oidcProviderSchema>;
