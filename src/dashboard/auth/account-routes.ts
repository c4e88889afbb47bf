import type { RouteDef } from '../../http/server.js';
import type { AuthDeps } from './auth-kit.js';

export function accountRoutes(_deps: AuthDeps): RouteDef[] {
  return [];
}
