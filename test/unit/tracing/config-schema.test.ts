import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config.js';

describe('tracing config', () => {
  it('is off by default, with the documented defaults', () => {
    expect(parseConfig({}).tracing).toEqual({ enabled: false, headers_env: {}, service_name: 'switchboard', sample_ratio: 1, export_delay_ms: 5000 });
  });

  it('refuses tracing on without a collector URL, naming the field', () => {
    expect(() => parseConfig({ tracing: { enabled: true } })).toThrow(ConfigError);
    expect(() => parseConfig({ tracing: { enabled: true } })).toThrow(/tracing\.otlp_endpoint: is required when tracing is enabled/);
  });

  it('takes header values from named environment variables only, and a ratio between 0 and 1', () => {
    expect(() => parseConfig({ tracing: { headers_env: { Authorization: 'not a name' } } })).toThrow(/tracing\.headers_env\.Authorization: must be an environment variable name/);
    expect(() => parseConfig({ tracing: { sample_ratio: 1.5 } })).toThrow(/tracing\.sample_ratio/);
    expect(() => parseConfig({ tracing: { enabled: true, otlp_endpoint: 'ftp://collector/v1/traces' } })).toThrow(/tracing\.otlp_endpoint/);
  });
});
