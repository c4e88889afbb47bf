/** The records the webhook core works on; storage maps rows to these, the sender speaks them. */

export interface WebhookEndpointRecord {
  /** UUID */
  readonly id: string;
  readonly projectId: string;
  readonly url: string;
  readonly description: string | null;
  readonly events: readonly string[];
  readonly isActive: boolean;
  readonly metadata: Readonly<Record<string, string>>;
  /** Unix ms */
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** `sending` is shown as `pending` on the wire: the attempt's outcome is not known yet. */
export type DeliveryState = 'pending' | 'sending' | 'delivered' | 'failed';

export interface DeliveryRecord {
  /** `del_<24 hex>`: the X-Webhook-ID of every attempt. */
  readonly id: string;
  readonly webhookId: string;
  readonly eventType: string;
  readonly state: DeliveryState;
  readonly attemptCount: number;
  readonly httpStatus: number | null;
  readonly responseBody: string | null;
  readonly createdAt: number;
}

/** A delivery whose next attempt has come, with what the attempt needs. */
export interface DueDelivery {
  readonly seq: number;
  readonly id: string;
  readonly webhookId: string;
  readonly url: string;
  /** null when the stored secret cannot be opened (the secret key changed). */
  readonly secret: string | null;
  readonly body: string;
  /** Attempts made before this one. */
  readonly attemptCount: number;
}

export interface WebhookAttempt {
  readonly url: string;
  readonly deliveryId: string;
  /** X-Webhook-Timestamp: Unix seconds at signing. */
  readonly timestamp: number;
  /** `sha256=<hex>` */
  readonly signature: string;
  readonly body: string;
}

export interface AttemptOutcome {
  /** A 2xx within the deadline. */
  readonly ok: boolean;
  readonly httpStatus: number | null;
  /** The first 1 KiB of the response body. */
  readonly responseBody: string | null;
  readonly errorMessage: string | null;
}

/** What the dispatcher writes back after an attempt (or when it gives a claimed row back unattempted). */
export type DeliveryResult =
  | {
      readonly seq: number;
      readonly kind: 'attempted';
      readonly state: 'pending' | 'delivered' | 'failed';
      readonly attemptCount: number;
      readonly nextAttemptAt: number | null;
      readonly outcome: AttemptOutcome;
      readonly at: number;
    }
  | { readonly seq: number; readonly kind: 'released' };

/** One page of a newest-first listing. */
export interface Page<T> {
  readonly items: T[];
  readonly hasMore: boolean;
}

/** PUT semantics: only the fields present change; `metadata` replaces the whole object. */
export interface WebhookPatch {
  readonly url?: string;
  readonly events?: readonly string[];
  readonly description?: string | null;
  readonly isActive?: boolean;
  readonly metadata?: Readonly<Record<string, string>>;
}
