/** Request ids are minted outside the transport too (background work, src/app): one generator, src/request-id.ts. */
export { newRequestId } from '../request-id.js';
