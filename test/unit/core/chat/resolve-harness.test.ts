import { describe, expect, it } from 'vitest';
import { AUGMENT_HEADER, FEATURE_HEADERS, HARNESS_OFF, resolveHarness } from '../../../../src/core/chat/header-flags.js';

describe('resolveHarness', () => {
  it('returns the shared faithful floor when no augmentation header is present', () => {
    expect(resolveHarness({ 'content-type': 'application/json', 'x-service-workspace': 'ws_1' })).toBe(HARNESS_OFF);
    expect(HARNESS_OFF.any).toBe(false);
    expect(HARNESS_OFF.mediaUrlResolution).toBe(true);
  });

  it('names twelve per-feature headers plus the compression header, all distinct', () => {
    const names = Object.values(FEATURE_HEADERS);
    expect(new Set(names).size).toBe(13);
    expect(names.filter((n) => n.startsWith('x-service-augment-'))).toHaveLength(12);
    expect(names).toContain('x-service-compression');
  });

  it('turns every feature but tool top-k on under X-Service-Augment: on', () => {
    const flags = resolveHarness({ [AUGMENT_HEADER]: 'on' });
    expect(flags.any).toBe(true);
    expect(flags.toolTopK).toBe(false);
    for (const f of ['fanoutNudge', 'compaction', 'maxTokensFloor', 'capabilityToolDrop', 'correctiveRetries', 'fabricatedToolCalls', 'toolAllowlist', 'toolChoiceDemotion', 'compression'] as const) {
      expect(flags[f]).toBe(true);
    }
  });

  it('lets a per-feature header win over X-Service-Augment, either way', () => {
    const off = resolveHarness({ [AUGMENT_HEADER]: 'on', [FEATURE_HEADERS.compaction]: 'no' });
    expect(off.compaction).toBe(false);
    expect(off.fanoutNudge).toBe(true);
    const on = resolveHarness({ [AUGMENT_HEADER]: 'off', [FEATURE_HEADERS.correctiveRetries]: 'TRUE' });
    expect(on.correctiveRetries).toBe(true);
    expect(on.fabricatedToolCalls).toBe(false);
  });

  it('uses the surface default when neither header says, and tool top-k stays off there too', () => {
    const flags = resolveHarness({}, true);
    expect(flags.compaction).toBe(true);
    expect(flags.compression).toBe(true);
    expect(flags.toolTopK).toBe(false);
    expect(resolveHarness({ [AUGMENT_HEADER]: 'off' }, true).compaction).toBe(false);
  });

  it('treats an unreadable value as absent', () => {
    const flags = resolveHarness({ [FEATURE_HEADERS.compression]: 'maybe' });
    expect(flags.compression).toBe(false);
    expect(flags.any).toBe(false);
  });

  it('enables tool top-k only through its own header', () => {
    expect(resolveHarness({ [FEATURE_HEADERS.toolTopK]: 'yes' }).toolTopK).toBe(true);
  });
});
