/**
 * How many webhook endpoint changes this process has committed. The outbox keeps its "anyone subscribed?"
 * answers for one event-loop turn (webhook-outbox.ts `subscribedNow`) and starts over when this moves, so an
 * endpoint made through this process counts for the next Response that finishes, even in the same turn.
 * Process-wide on purpose: the endpoints store and the outbox are built apart (webhook-system.ts), and a
 * change is a change whichever connection committed it.
 */
let count = 0;

export const endpointWriteCount = (): number => count;

export function noteEndpointWrite(): void {
  count += 1;
}
