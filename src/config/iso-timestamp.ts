/** A timestamp field of the config file and of the key commands and routes that take one. */
import { z } from 'zod';

/** Strict ISO 8601 with a time and zone: Date.parse alone accepts text like "hello 1". */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
export const isoTimestamp = z
  .string()
  .refine((s) => ISO_8601.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 timestamp with a zone, e.g. 2027-01-31T00:00:00Z');
