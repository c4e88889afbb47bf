/** The Redis implementations of the coordination ports (issue 12); main.ts imports only this. */
export { createRedisCoordination, type RedisCoordination, type RedisCoordinationOptions } from './redis-coordination.js';
