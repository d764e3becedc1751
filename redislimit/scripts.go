package redislimit

import "github.com/redis/go-redis/v9"

// The scripts share their conventions. Instants and durations are whole
// microseconds, read from Redis's own clock (TIME), so that the clocks of
// the machines that share a limit play no part. Every number stays below
// 2^53, where Lua's doubles are exact (see maxMicros). Numbers written to
// Redis are formatted by S ("%d", which Redis's 64-bit Lua 5.1 prints
// through a C long), never left to Lua's number-to-string conversion,
// which prints large integers in exponent form.
//
// KEYS[1] is the key's throttle, a hash: u the end of its pause, l the
// pause's length, g its count of pauses (the generation), s its strikes, p
// its throttled probe answers, h 1 while half-open, q the end of the probe's
// lease (0: no probe in flight), i the lease's number. KEYS[2..] hold the
// limit's parts, one key per part, all in the slot of one hash tag: a
// string "TAT latest" (µs) for a token bucket or pacer (GCRA), "window
// count" for a fixed window, a sorted set of booked instants for a sliding
// log.

// scriptHead is the preamble of every script.
const scriptHead = `
local function S(x) return string.format('%d', x) end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local function expireIn(key, us)
  if us <= 0 then redis.call('DEL', key) return end
  redis.call('PEXPIRE', key, S(math.ceil(us / 1000) + 1))
end
local function get2(key)
  local v = redis.call('GET', key)
  if not v then return nil, nil end
  local sp = string.find(v, ' ', 1, true)
  return tonumber(string.sub(v, 1, sp - 1)), tonumber(string.sub(v, sp + 1))
end
local function set2(key, x, y, us)
  if us <= 0 then redis.call('DEL', key) return end
  redis.call('SET', key, S(x) .. ' ' .. S(y), 'PX', S(math.ceil(us / 1000) + 1))
end
local function thKeep(u, l, q, stale)
  return math.max(u - now + math.max(l, stale), q - now)
end
`

// decideScript is one Wait decision: the throttle first (paused, waiting
// for the probe, or electing this request as the probe), then every part's
// earliest common instant, all booked or none.
//
// ARGV: maxWait (0: none), deadline left (-1: none), probe lease, stale,
// expected probes (-1: none), parts, the decision's unique id (the suffix
// of its sorted-set members), then 4 numbers per part: kind (1 GCRA:
// interval, tau, queue bound or -1; 2 fixed window: period, count, margin;
// 3 sliding log: period, count, 0).
//
// Replies: {0, delay, gen, strikes, probe, lease, instant, member per part}
// booked; {1, pause left, gen, probes} paused; {2, lease left, gen, probes}
// a probe is in flight; {3, delay, reason (1 too long, 2 queue full, 3
// deadline), probes} refused; {4, 0, gen, probes} the probe was throttled since
// the caller's first look.
var decideScript = redis.NewScript(scriptHead + `
local maxWait, dlLeft, lease, stale, want, np =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local uid = ARGV[7]
local u, l, g, s, pr, h, q, pid = 0, 0, 0, 0, 0, 0, 0, 0
if redis.call('EXISTS', KEYS[1]) == 1 then -- most keys never met a throttle
  local th = redis.call('HMGET', KEYS[1], 'u', 'l', 'g', 's', 'p', 'h', 'q', 'i')
  u, l, g, s = tonumber(th[1]) or 0, tonumber(th[2]) or 0, tonumber(th[3]) or 0, tonumber(th[4]) or 0
  pr, h, q, pid = tonumber(th[5]) or 0, tonumber(th[6]) or 0, tonumber(th[7]) or 0, tonumber(th[8]) or 0
end
if want >= 0 and pr ~= want then return {4, 0, g, pr} end
if u > now then return {1, u - now, g, pr} end
local probe = 0
if h == 1 then
  if q > now then return {2, q - now, g, pr} end
  probe = 1
end
-- The parts' parameters and state, in one flat array (a table per part
-- costs more than the decision), 6 slots per part from o = 6(j-1): kind, x,
-- y, z as in ARGV, then the state: a GCRA's TAT and latest booking, a fixed
-- window's index and count, a sliding log's latest entry and the entry the
-- next booking waits for (-1: none).
local P = {}
for j = 1, np do
  local b, o = 7 + (j - 1) * 4, (j - 1) * 6
  local kind, x, y, key = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), KEYS[1 + j]
  local sa, sb
  if kind == 1 then
    sa, sb = get2(key)
    sa, sb = sa or 0, sb or 0
  elseif kind == 2 then
    sa, sb = get2(key)
    sa, sb = sa or -1, sb or 0
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', S(now - x))
    local m = redis.call('ZCARD', key)
    sa, sb = 0, -1
    if m > 0 then sa = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
    if m >= y then sb = tonumber(redis.call('ZRANGE', key, m - y, m - y, 'WITHSCORES')[2]) end
  end
  P[o + 1], P[o + 2], P[o + 3], P[o + 4], P[o + 5], P[o + 6] = kind, x, y, tonumber(ARGV[b + 4]), sa, sb
end
local function earliest(j, t)
  local o = (j - 1) * 6
  local kind, x, y, z, sa, sb = P[o + 1], P[o + 2], P[o + 3], P[o + 4], P[o + 5], P[o + 6]
  if kind == 1 then
    return math.max(t, math.max(sa, t) + x - y)
  elseif kind == 2 then
    local w = math.floor(t / x)
    local r
    if w > sa or (w == sa and sb < y) then r = t
    elseif w < sa and sb < y then r = sa * x
    else r = (math.max(w, sa) + 1) * x end
    if z > 0 and r - math.floor(r / x) * x >= x - z then r = (math.floor(r / x) + 1) * x end
    return r
  end
  local r = math.max(t, sa)
  if sb >= 0 then r = math.max(r, sb + x) end
  return r
end
-- The earliest instant every part admits: one pass for one part (its
-- earliest instant admits), passes until none moves for several.
local t, settled = now, false
for _ = 1, 16 do
  local moved = false
  for j = 1, np do
    local r = earliest(j, t)
    if r > t then t, moved = r, true end
  end
  if not moved or np == 1 then settled = true break end
end
if not settled then return {3, 0, 1, pr} end
local d = t - now
for j = 1, np do
  local o = (j - 1) * 6
  if P[o + 1] == 1 and P[o + 4] >= 0 and d > P[o + 4] then return {3, d, 2, pr} end
end
if maxWait > 0 and d > maxWait then return {3, d, 1, pr} end
if dlLeft >= 0 and d > 0 and d >= dlLeft then return {3, d, 3, pr} end
local res = {0, d, g, s, probe, 0, t}
for j = 1, np do
  local o = (j - 1) * 6
  local kind, x, sa, sb, key = P[o + 1], P[o + 2], P[o + 5], P[o + 6], KEYS[1 + j]
  local mem = ''
  if kind == 1 then
    local a = math.max(sa, t) + x
    set2(key, a, math.max(sb, t), a - now)
  elseif kind == 2 then
    local w, n = math.floor(t / x), 1
    if w <= sa then w, n = sa, sb + 1 end
    set2(key, w, n, (w + 1) * x - now)
  else
    mem = S(t) .. '-' .. uid
    redis.call('ZADD', key, S(t), mem)
    expireIn(key, math.max(t, sa) + x - now)
  end
  res[7 + j] = mem
end
if probe == 1 then
  pid = pid + 1
  q = now + lease
  redis.call('HSET', KEYS[1], 'q', S(q), 'i', S(pid))
  expireIn(KEYS[1], thKeep(u, l, q, stale))
  res[6] = pid
end
return res
`)

// cancelScript gives back a booking that decideScript made at instant t
// (ARGV[1]) whose request will not leave, and the probe role if it held it
// (ARGV[2] 1, ARGV[3] its lease), telling the key's waiters through channel
// ARGV[4] (message "a 0 " .. ARGV[5]). A booking whose instant has passed
// counts as used. ARGV[6] is the number of parts, then 3 per part: kind,
// x (as in decideScript), member.
//
// A token bucket or pacer gives back only the part of its interval that no
// later booking overlaps (golang.org/x/time/rate's Reservation.CancelAt):
// exact when nothing was booked after it, never looser.
var cancelScript = redis.NewScript(scriptHead + `
local t, probe, lease, np = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6])
if t > now then
  for j = 1, np do
    local b = 6 + (j - 1) * 3
    local kind, x, mem, key = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), ARGV[b + 3], KEYS[1 + j]
    if kind == 1 then
      local a, bb = get2(key)
      a, bb = a or 0, bb or 0
      local give = x - math.max(0, bb - t)
      if give > 0 then a = math.max(a - give, 0) end
      set2(key, a, math.min(bb, a - x), a - now)
    elseif kind == 2 then
      local w, c = get2(key)
      if w and math.floor(t / x) == w and c > 0 then set2(key, w, c - 1, (w + 1) * x - now) end
    else
      redis.call('ZREM', key, mem)
    end
  end
end
if probe == 1 then
  local v = redis.call('HMGET', KEYS[1], 'q', 'i')
  if (tonumber(v[2]) or 0) == lease and (tonumber(v[1]) or 0) > now then
    redis.call('HSET', KEYS[1], 'q', '0')
    redis.call('PUBLISH', ARGV[4], 'a 0 ' .. ARGV[5])
  end
end
return 0
`)

// settleScript records how a request ended, as the in-memory throttle
// engine of package pace does (a 429's pause, strikes, the probe's answer).
// ARGV: gen and lease of the Permit, probe (1/0), pause (0: none),
// response (1/0), stale, channel, key. It writes nothing for a key that has
// no throttle and met none. It publishes "p <gen> <key>" when it set or
// extended the pause, "a <probes> <key>" when it ended the probe's role.
var settleScript = redis.NewScript(scriptHead + `
local pgen, plea, probe, pause, resp, stale =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local ch, key = ARGV[7], ARGV[8]
if pause <= 0 and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local th = redis.call('HMGET', KEYS[1], 'u', 'l', 'g', 's', 'p', 'h', 'q', 'i')
local u, l, g, s = tonumber(th[1]) or 0, tonumber(th[2]) or 0, tonumber(th[3]) or 0, tonumber(th[4]) or 0
local pr, h, q, pid = tonumber(th[5]) or 0, tonumber(th[6]) or 0, tonumber(th[7]) or 0, tonumber(th[8]) or 0
local mine = probe == 1 and q > now and pid == plea
local msg = nil
if pause > 0 then
  if pgen == g then s = s + 1 end
  if mine then q, pr, msg = 0, pr + 1, 'a ' end
  if not (pgen ~= g and u <= now and h == 0) and now + pause > u then
    u, l, g, h, msg = now + pause, pause, g + 1, 1, 'p '
  end
elseif resp == 1 then
  if mine then q, msg = 0, 'a ' end
  s = 0
  if u <= now and q <= now then h = 0 end
elseif mine then
  q, msg = 0, 'a '
end
redis.call('HSET', KEYS[1], 'u', S(u), 'l', S(l), 'g', S(g), 's', S(s), 'p', S(pr), 'h', S(h), 'q', S(q), 'i', S(pid))
expireIn(KEYS[1], thKeep(u, l, q, stale))
if msg == 'p ' then redis.call('PUBLISH', ch, msg .. S(g) .. ' ' .. key)
elseif msg then redis.call('PUBLISH', ch, msg .. S(pr) .. ' ' .. key) end
return 0
`)

// departScript moves the booking a decision made at instant t (ARGV[1])
// to t + L (ARGV[2], > 0), where its request actually left, as package
// pace's Keyed does when it learns of a late departure: a token bucket's or
// pacer's later units move back by L, a window counts the unit where it
// left. ARGV[3] is the number of parts, then 3 per part: kind, x (as in
// decideScript), member (a sliding log's; the part's new member is it with
// the instant replaced). Bookings made after this one by then keep their
// instants.
var departScript = redis.NewScript(scriptHead + `
local t, L, np = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local left = t + L
for j = 1, np do
  local b = 3 + (j - 1) * 3
  local kind, x, mem, key = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), ARGV[b + 3], KEYS[1 + j]
  if kind == 1 then
    local a, bb = get2(key)
    if a then
      a = a + L
      set2(key, a, math.max(bb, left), a - now)
    end
  elseif kind == 2 then
    local w, c = get2(key)
    w, c = w or -1, c or 0
    local w0, w1 = math.floor(t / x), math.floor(left / x)
    if w1 > w0 then
      if w0 == w then c = math.max(0, c - 1) end
      if w1 > w then w, c = w1, 1 else c = c + 1 end
      set2(key, w, c, (w + 1) * x - now)
    end
  else
    if redis.call('ZREM', key, mem) == 1 then
      local _, dash = string.find(mem, '-', 1, true)
      redis.call('ZADD', key, S(left), S(left) .. string.sub(mem, dash))
      local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      expireIn(key, last + x - now)
    end
  end
end
return 0
`)
