import { describe, expect, it } from 'vitest';
import { canMove, eventOf } from '../../../../src/core/batches/batch-machine.js';

describe('the batch lifecycle', () => {
  it('allows the OpenAI transitions and nothing out of a terminal state', () => {
    expect(canMove('validating', 'in_progress')).toBe(true);
    expect(canMove('validating', 'failed')).toBe(true);
    expect(canMove('in_progress', 'finalizing')).toBe(true);
    expect(canMove('finalizing', 'completed')).toBe(true);
    expect(canMove('finalizing', 'expired')).toBe(true);
    expect(canMove('in_progress', 'cancelling')).toBe(true);
    expect(canMove('cancelling', 'cancelled')).toBe(true);
    expect(canMove('in_progress', 'completed')).toBe(false);
    expect(canMove('finalizing', 'cancelling')).toBe(false);
    for (const end of ['completed', 'failed', 'expired', 'cancelled'] as const) expect(canMove(end, 'cancelling')).toBe(false);
  });

  it('sends batch.completed, batch.failed (also when expired) and batch.cancelled, and nothing for live states', () => {
    expect(eventOf('completed')).toBe('batch.completed');
    expect(eventOf('failed')).toBe('batch.failed');
    expect(eventOf('expired')).toBe('batch.failed');
    expect(eventOf('cancelled')).toBe('batch.cancelled');
    expect(eventOf('in_progress')).toBeNull();
  });
});
