import { describe, expect, it } from 'vitest';
import {
  AUGMENT_HEADER,
  FEATURE_HEADERS,
  augmentationFlag,
  mediaUrlResolutionEnabled,
  parseBooleanHeader,
} from '../../../../src/core/chat/header-flags.js';

describe('parseBooleanHeader', () => {
  it.each(['on', '1', 'true', 'yes', 'ON', 'True', ' yes ', '\tOn'])('reads %j as enabled', (value) => {
    expect(parseBooleanHeader(value)).toBe(true);
  });

  it.each(['off', '0', 'false', 'no', 'OFF', 'False', ' no '])('reads %j as disabled', (value) => {
    expect(parseBooleanHeader(value)).toBe(false);
  });

  it.each([undefined, '', 'maybe', 'enable', '2', 'o n', 'truee'])('treats %j as absent', (value) => {
    expect(parseBooleanHeader(value)).toBeNull();
  });
});

const CLAMP = FEATURE_HEADERS.maxOutputTokensClamp;

describe('augmentationFlag', () => {
  it.each<[string, Record<string, string>, boolean]>([
    ['is off for API traffic with no headers', {}, false],
    ['follows X-Service-Augment on', { [AUGMENT_HEADER]: 'on' }, true],
    ['follows X-Service-Augment off', { [AUGMENT_HEADER]: 'off' }, false],
    ['lets the feature header enable it under X-Service-Augment off', { [AUGMENT_HEADER]: 'off', [CLAMP]: 'yes' }, true],
    ['lets the feature header disable it under X-Service-Augment on', { [AUGMENT_HEADER]: 'on', [CLAMP]: '0' }, false],
    ['falls back to X-Service-Augment when the feature header is unreadable', { [AUGMENT_HEADER]: 'true', [CLAMP]: 'sometimes' }, true],
    ['ignores another feature header', { [FEATURE_HEADERS.compaction]: 'on' }, false],
  ])('%s', (_, headers, expected) => {
    expect(augmentationFlag(headers, CLAMP)).toBe(expected);
  });

  it.each<[string, Record<string, string>, boolean]>([
    ['is on by default on the service\'s own surfaces', {}, true],
    ['still yields to X-Service-Augment off there', { [AUGMENT_HEADER]: 'off' }, false],
    ['still yields to the feature header there', { [CLAMP]: 'off' }, false],
  ])('%s', (_, headers, expected) => {
    expect(augmentationFlag(headers, CLAMP, true)).toBe(expected);
  });

  it.each<[string, Record<string, string>, boolean]>([
    ['keeps Tool-Top-K off under X-Service-Augment on', { [AUGMENT_HEADER]: 'on' }, false],
    ['keeps Tool-Top-K off on a surface that defaults on', {}, false],
    ['enables Tool-Top-K only through its own header', { [FEATURE_HEADERS.toolTopK]: 'on' }, true],
  ])('%s', (_, headers, expected) => {
    expect(augmentationFlag(headers, FEATURE_HEADERS.toolTopK, true)).toBe(expected);
  });
});

describe('mediaUrlResolutionEnabled', () => {
  it.each<[string, Record<string, string>, boolean]>([
    ['is on with no headers', {}, true],
    ['stays on at the faithful floor of X-Service-Augment off', { [AUGMENT_HEADER]: 'off' }, true],
    ['turns off only through its own header', { [FEATURE_HEADERS.mediaUrlResolution]: 'off' }, false],
    ['stays on when its own header is unreadable', { [FEATURE_HEADERS.mediaUrlResolution]: 'nah' }, true],
  ])('%s', (_, headers, expected) => {
    expect(mediaUrlResolutionEnabled(headers)).toBe(expected);
    expect(augmentationFlag(headers, FEATURE_HEADERS.mediaUrlResolution)).toBe(expected);
  });
});
