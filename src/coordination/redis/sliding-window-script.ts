/**
 * The Lua port of `SlidingWindowCounter` (src/core/limits/sliding-window.ts; docs/decisions.md "Rate
 * limits: the algorithm" and "Shared limits in Redis"), run by Redis so that one admission is one atomic
 * check-then-consume over every counter it touches, whichever replica sends it.
 *
 * A TS string constant, not a .lua file: tsc copies no .lua file to dist/, and the script is part of the
 * code (its SHA-1 is computed once at load).
 *
 * One counter is one hash: `h` head bucket index, `t` tail index, `n` total, `w` latest time seen, `W`
 * window (a counter of another window is replaced, as RateLimiter rebuilds a key's quota counter when its
 * window changes), and per ring slot `s<i>` units and `l<i>` time of its latest unit (absent = 0). The
 * arithmetic is the TypeScript's, in the same order on the same doubles, so both implementations agree
 * on every count and wait. Numbers are written with %.17g: Lua's tostring keeps 14 digits only.
 *
 * Time is the caller's `now` (ARGV), never Redis's TIME: replicas must run NTP-synced clocks; a replica
 * whose clock is behind the others' reads as standing (the ring only moves forward).
 *
 * Calls:
 *   admit  KEYS project, quota, tokens; ARGV 'admit', now, buckets, ttl margin ms, project limit, project
 *          window ms, quota limit, quota window ms, token limit, token window ms (a limit of 0 = that
 *          counter does not apply). Returns { code, projectUsed, projectWaitMs, quotaUsed, quotaWaitMs }:
 *          code 0 admitted (both request counters consumed), 1 a request counter is full, 2 the token
 *          counter is spent; used = before this request; waits as RateLimiter reads them (after the add
 *          when admitted). Numbers as strings: Lua numbers returned to Redis are truncated to integers.
         Optional ARGV carried units, carried time: token charges the caller made before this admission
         and had not sent yet, added to the token counter first (one script run instead of two).
 *   charge KEYS tokens; ARGV 'charge', now, buckets, ttl margin ms, units, window ms.
 */
import { createHash } from 'node:crypto';

/** The counter's functions (open, advance, add, wait, save), shared with the throttle script (throttle-script.ts). */
export const SLIDING_WINDOW_FUNCTIONS = `
local function fmt(x) return string.format('%.17g', x) end

local function open(key, win, buckets)
  local m = redis.call('HMGET', key, 'h', 't', 'n', 'w', 'W')
  local c = { key = key, win = win, nb = buckets, size = buckets + 1, slots = {}, dirty = {}, clear = false, changed = false }
  if m[4] and tonumber(m[5]) == win then
    c.h = tonumber(m[1]); c.t = tonumber(m[2]); c.n = tonumber(m[3]); c.w = tonumber(m[4]); c.exists = true
  else
    c.h = 0; c.t = 0; c.n = 0; c.w = -math.huge; c.exists = false
    -- a counter of another window: replaced by a new one
    if m[4] then c.clear = true end
  end
  return c
end

local function slot(c, i)
  local s = c.slots[i]
  if s == nil then
    if c.clear or not c.exists then
      s = { 0, 0 }
    else
      local r = redis.call('HMGET', c.key, 's' .. i, 'l' .. i)
      s = { tonumber(r[1]) or 0, tonumber(r[2]) or 0 }
    end
    c.slots[i] = s
  end
  return s
end

local function clamp(c) if c.n < 1e-9 then c.n = 0 end end

local function advance(c, now)
  if not (now > c.w) then return end
  c.w = now
  c.changed = true
  local index = math.floor(now * c.nb / c.win)
  if index > c.h then
    if index - c.h >= c.size then
      c.clear = true; c.slots = {}; c.dirty = {}; c.n = 0
    else
      for i = c.h + 1, index do
        local k = i % c.size
        local s = slot(c, k)
        if s[1] ~= 0 then c.n = c.n - s[1]; s[1] = 0; c.dirty[k] = true end
      end
      clamp(c)
    end
    c.h = index
    if c.t < index - c.nb then c.t = index - c.nb end
  end
  local oldest = (index + 1) % c.size
  local s = slot(c, oldest)
  if s[1] ~= 0 and s[2] + c.win <= now then
    c.n = c.n - s[1]; s[1] = 0; c.dirty[oldest] = true
    clamp(c)
  end
end

local function add(c, now, units)
  advance(c, now)
  local k = c.h % c.size
  local s = slot(c, k)
  s[1] = s[1] + units; s[2] = c.w; c.dirty[k] = true
  c.n = c.n + units
  c.changed = true
end

local function wait(c, now)
  advance(c, now)
  if c.n <= 0 then return 0 end
  while c.t < c.h and slot(c, c.t % c.size)[1] == 0 do c.t = c.t + 1; c.changed = true end
  return math.max(0, slot(c, c.t % c.size)[2] + c.win - c.w)
end

local function save(c, ttl)
  if not c.changed then return end
  if c.clear then redis.call('DEL', c.key) end
  local set = { 'h', fmt(c.h), 't', fmt(c.t), 'n', fmt(c.n), 'w', fmt(c.w), 'W', fmt(c.win) }
  local gone = {}
  for k, _ in pairs(c.dirty) do
    local s = c.slots[k]
    if s[1] == 0 then
      gone[#gone + 1] = 's' .. k; gone[#gone + 1] = 'l' .. k
    else
      set[#set + 1] = 's' .. k; set[#set + 1] = fmt(s[1]); set[#set + 1] = 'l' .. k; set[#set + 1] = fmt(s[2])
    end
  end
  redis.call('HSET', c.key, unpack(set))
  if #gone > 0 and not c.clear then redis.call('HDEL', c.key, unpack(gone)) end
  redis.call('PEXPIRE', c.key, ttl)
end
`;

export const SLIDING_WINDOW_SCRIPT = `${SLIDING_WINDOW_FUNCTIONS}
local now = tonumber(ARGV[2])
local buckets = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])

if ARGV[1] == 'charge' then
  local win = tonumber(ARGV[6])
  local c = open(KEYS[1], win, buckets)
  add(c, now, tonumber(ARGV[5]))
  save(c, win + margin)
  return 1
end

local pLimit = tonumber(ARGV[5]); local pWin = tonumber(ARGV[6])
local qLimit = tonumber(ARGV[7]); local qWin = tonumber(ARGV[8])
local tLimit = tonumber(ARGV[9]); local tWin = tonumber(ARGV[10])
local carried = tonumber(ARGV[11] or '0')
local t = nil
-- token charges made before this admission and not yet sent, applied first (as the caller made them)
if carried > 0 then t = open(KEYS[3], tWin, buckets); add(t, tonumber(ARGV[12]), carried) end
local p = nil; local q = nil
local pUsed = 0; local qUsed = 0
if pLimit > 0 then p = open(KEYS[1], pWin, buckets); advance(p, now); pUsed = p.n end
if qLimit > 0 then q = open(KEYS[2], qWin, buckets); advance(q, now); qUsed = q.n end
local code = 0
if (p and pUsed >= pLimit) or (q and qUsed >= qLimit) then
  code = 1
elseif tLimit > 0 then
  -- RateLimiter creates the token counter on the first charge only: an absent one counts 0
  t = t or open(KEYS[3], tWin, buckets)
  if t.exists or t.changed then
    advance(t, now)
    if t.n >= tLimit then code = 2 end
  end
end
if t then save(t, tWin + margin) end
if code == 0 then
  if p then add(p, now, 1) end
  if q then add(q, now, 1) end
end
local pWait = 0; local qWait = 0
if p then pWait = wait(p, now); save(p, pWin + margin) end
if q then qWait = wait(q, now); save(q, qWin + margin) end
return { code, fmt(pUsed), fmt(pWait), fmt(qUsed), fmt(qWait) }
`;

export const SLIDING_WINDOW_SCRIPT_SHA = createHash('sha1').update(SLIDING_WINDOW_SCRIPT).digest('hex');
