/**
 * The throttle counters of core/coordination/throttle-port.ts in Redis (issue 31), as one Lua script over
 * the sliding-window functions of the limit counters (sliding-window-script.ts), so that a sign-in
 * throttle counts the attempts of every replica and a reservation is one atomic check-then-consume.
 *
 * Calls (ARGV op, now, buckets, ttl margin ms, window ms, ...):
 *   reserve  KEYS the counters; ARGV[6..] their limits. Takes one unit from each when none is at its
 *            limit. Returns { 0 admitted | 1 refused, wait ms until the fullest frees a unit }.
 *   release  KEYS the counter; ARGV[6] the reservation's time. Takes back one unit from the bucket it
 *            fell in or the first non-empty one after (SlidingWindowCounter.remove).
 * A reset is a DEL (redis-throttles.ts).
 */
import { createHash } from 'node:crypto';
import { SLIDING_WINDOW_FUNCTIONS } from './sliding-window-script.js';

export const THROTTLE_SCRIPT = `${SLIDING_WINDOW_FUNCTIONS}
local now = tonumber(ARGV[2])
local buckets = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local win = tonumber(ARGV[5])

if ARGV[1] == 'release' then
  if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
  local c = open(KEYS[1], win, buckets)
  advance(c, now)
  local i = math.max(math.floor(tonumber(ARGV[6]) * c.nb / c.win), c.h - c.nb)
  while i <= c.h do
    local k = i % c.size
    local s = slot(c, k)
    if s[1] > 0 then
      local taken = math.min(s[1], 1)
      s[1] = s[1] - taken; c.dirty[k] = true; c.changed = true
      c.n = c.n - taken
      clamp(c)
      break
    end
    i = i + 1
  end
  save(c, win + margin)
  return 1
end

local cs = {}
local full = false
local waitMs = 0
for i = 1, #KEYS do
  local c = open(KEYS[i], win, buckets)
  advance(c, now)
  cs[i] = c
  if c.n >= tonumber(ARGV[5 + i]) then
    full = true
    waitMs = math.max(waitMs, wait(c, now))
  end
end
if not full then
  for i = 1, #KEYS do add(cs[i], now, 1) end
end
for i = 1, #KEYS do save(cs[i], win + margin) end
if full then return { 1, fmt(waitMs) } end
return { 0, '0' }
`;

export const THROTTLE_SCRIPT_SHA = createHash('sha1').update(THROTTLE_SCRIPT).digest('hex');
