/** The MCP server's DNS-rebinding guard (src/mcp/origin-guard.ts, docs/mcp.md "Origin and Host"). */
import { describe, expect, it } from 'vitest';
import { hostnameOf, originRefusal, type OriginPolicy } from '../../../src/mcp/origin-guard.js';

const loopback: OriginPolicy = { allowedHosts: [], allowedOrigins: [], listensOnLoopback: true };
const publicBind: OriginPolicy = { allowedHosts: [], allowedOrigins: [], listensOnLoopback: false };
const listed: OriginPolicy = { allowedHosts: ['gateway.internal'], allowedOrigins: ['https://inspector.example.com'], listensOnLoopback: false };

describe('originRefusal', () => {
  it('accepts loopback Host names, with or without a port, on a loopback-bound gateway', () => {
    for (const host of ['localhost', 'localhost:8080', '127.0.0.1:8080', '[::1]:8080', '127.1.2.3']) expect(originRefusal(host, undefined, loopback)).toBeNull();
  });

  it('refuses a rebound name as Host on a loopback-bound gateway', () => {
    expect(originRefusal('evil.example.com', undefined, loopback)).toMatch(/Host/);
    expect(originRefusal('evil.example.com:8080', 'http://evil.example.com:8080', loopback)).toMatch(/Host/);
  });

  it('accepts a loopback browser Origin on a loopback-bound gateway and refuses any other', () => {
    expect(originRefusal('127.0.0.1:8080', 'http://localhost:6274', loopback)).toBeNull();
    expect(originRefusal('127.0.0.1:8080', 'http://[::1]:6274', loopback)).toBeNull();
    expect(originRefusal('127.0.0.1:8080', 'http://evil.example.com', loopback)).toMatch(/Origin/);
    expect(originRefusal('127.0.0.1:8080', 'null', loopback)).toMatch(/Origin/);
  });

  it('accepts any Host on a gateway bound elsewhere, but no browser Origin that is not listed', () => {
    expect(originRefusal('api.example.com', undefined, publicBind)).toBeNull();
    expect(originRefusal('api.example.com', 'https://api.example.com', publicBind)).toMatch(/Origin/);
  });

  it('follows the configured lists', () => {
    expect(originRefusal('gateway.internal:8080', undefined, listed)).toBeNull();
    expect(originRefusal('localhost', undefined, listed)).toMatch(/Host/);
    expect(originRefusal('gateway.internal', 'https://inspector.example.com', listed)).toBeNull();
    expect(originRefusal('gateway.internal', 'https://gateway.internal', listed)).toBeNull();
    expect(originRefusal('gateway.internal', 'https://other.example.com', listed)).toMatch(/Origin/);
  });
});

describe('hostnameOf', () => {
  it('drops the port, keeping IPv6 brackets', () => {
    expect(hostnameOf('Example.COM:8080')).toBe('example.com');
    expect(hostnameOf('[::1]:8080')).toBe('[::1]');
    expect(hostnameOf('[::1]')).toBe('[::1]');
  });
});
