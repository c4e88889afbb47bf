import { describe, it, expect } from 'vitest';
import { RequestLog } from '../../../src/simulator/request-log.js';
import { ModelRegistry } from '../../../src/simulator/models.js';

describe('RequestLog', () => {
  it('returns newest first and keeps only the last capacity entries', () => {
    const log = new RequestLog(3);
    for (let i = 0; i < 5; i++) log.record('POST', `/p${i}`, {});
    expect(log.recent(10).map((e) => e.path)).toEqual(['/p4', '/p3', '/p2']);
    expect(log.recent(1).map((e) => e.seq)).toEqual([5]);
  });

  it('clears but keeps sequence numbers increasing', () => {
    const log = new RequestLog(3);
    log.record('GET', '/a', {});
    log.clear();
    expect(log.recent(10)).toEqual([]);
    expect(log.record('GET', '/b', {}).seq).toBe(2);
  });
});

describe('ModelRegistry', () => {
  it('detects reasoning models by name or configuration', () => {
    const reg = new ModelRegistry(['deepseek-r1']);
    expect(reg.reasons('deepseek-r1')).toBe(true);
    expect(reg.reasons('My-Reasoner')).toBe(true);
    expect(reg.reasons('qwen-THINKING')).toBe(true);
    expect(reg.reasons('sim-chat')).toBe(false);
  });

  it('lists builtins plus seen models', () => {
    const reg = new ModelRegistry();
    reg.note('custom');
    expect(reg.list().data.map((m) => m.id)).toEqual(['sim-chat', 'sim-reasoner', 'sim-embed', 'custom']);
  });
});
