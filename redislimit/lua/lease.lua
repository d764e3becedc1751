-- lease.lua: one process renews its share of one key's limit (see lease.go).
-- KEYS[1]: the key's shares, a hash: process id -> "g e h hu w" (its grant
-- in units, its lease's end, the claim it still holds and until when, its
-- demand in units); field "!ok" marks a hash written after this Redis had
-- been up longer than a claim lives. KEYS[2]: the key's throttle, KEYS[3]
-- its learned record (both read only).
-- ARGV: id, demand (units; -1: all it can get), units (U), lease (µs), lead
-- (µs), span (µs), the grant it holds, its lease's rest (µs), the claim it
-- holds, its rest (µs), now (µs; 0: Redis's TIME), uptime (µs; -1: INFO's),
-- stop (1: the process admits nothing more, its Limiter closed), shrunk
-- (1: the process shrank its share to the grant it holds just before it
-- sent this, and admitted fewer than that in the window before: the grant
-- and claim it reports are all it claims).
-- A claim is counted until the lease's end plus the span: what a share
-- admitted counts in the server's windows until then. The sum of the
-- claims never exceeds U: a share grows only into what no other claim
-- holds, and a share that shrinks keeps its claim until its old end.
-- Reply: {grant, lease (µs), claim, claim's rest (µs), retry in (µs; 0:
-- none), pause's rest (µs), the throttle's generation, half-open (1/0),
-- fresh (1/0), how many more units it would get now wanting all, the
-- learned pace's interval at now (µs; 0: none)}.
--- @lease
local id, want, U = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local L, lead, span = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local rg, rr, rh, rhr = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local now, up, stop = tonumber(ARGV[11]), tonumber(ARGV[12]), ARGV[13] == '1'
local shrunk = ARGV[14] == '1'
if now <= 0 then
  local tm = redis.call('TIME')
  now = tm[1] * 1000000 + tm[2]
end
local life = L + lead + span -- the longest a claim lives
if want < 0 or want > U then want = U end
local function clamp(x, lo, hi)
  if not x or x ~= x or x < lo then return lo end
  if x > hi then return hi end
  return x
end
rg, rh = clamp(rg, 0, U), clamp(rh, 0, U)
rr, rhr = clamp(rr, 0, L + lead), clamp(rhr, 0, life)

-- The claims. Another process's lease may be longer than this one's, up
-- to $R µs with its lead. An entry that is not five numbers in range
-- counts as the whole limit held for a whole claim's life: stricter,
-- never looser.
local all = redis.call('HGETALL', KEYS[1])
local ok = false
local ents = {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == '!ok' then ok = true
  else
    local x = {string.match(v, '^(%S+) (%S+) (%S+) (%S+) (%S+)$')}
    local g, e, h, hu, w = tonumber(x[1]), tonumber(x[2]), tonumber(x[3]), tonumber(x[4]), tonumber(x[5])
    if not (g and e and h and hu and w and g >= 0 and g <= U and h >= 0 and h <= U and w >= 0 and w <= U and
        e <= now + $R and hu <= now + $R + span) then
      g, e, h, hu, w = U, now + L + lead, U, now + life, U
    end
    if now < e + span or now < hu then ents[f] = {g, e, h, hu, w}
    else redis.call('HDEL', KEYS[1], f) end
  end
end
local function claim(c)
  local v = 0
  if now < c[1 + 1] + span then v = c[1] end
  if now < c[4] and c[3] > v then v = c[3] end
  return v
end

-- Whether a claim may live that this Redis never saw: it started less
-- than a claim's life ago (a restart without persistence forgets).
local fresh = false
if not ok then
  if up < 0 then
    local s = redis.call('INFO', 'server')
    up = (tonumber(string.match(s, 'uptime_in_seconds:(%d+)')) or 0) * 1000000
  end
  fresh = up < life + 1000000 -- the uptime counts whole seconds
end

-- This process's claim: what Redis holds of it, and what it says it holds.
local me = ents[id] or {0, 0, 0, 0, 0}
ents[id] = nil
if shrunk then -- its share admits no more than rg in any window from now: what Redis holds of it is older
  me = {rg, now + rr, rh, now + rhr, me[5]}
end
if stop then -- it admits nothing more: what it admitted counts a span more
  want, rr = 0, 0
  if me[2] > now then me[2] = now end
end
local held = 0 -- what the other processes hold now; none grows before its next renewal
local n, sum, next_ = 1, want, 0
for _, c in pairs(ents) do
  held = held + claim(c)
  if now < c[2] then n, sum = n + 1, sum + c[5] end
  for _, t in ipairs({c[2] + span, c[4]}) do
    if t > now and (next_ == 0 or t < next_) then next_ = t end
  end
end

-- The target of a demand w: proportional share of U by demand (Doorman's),
-- over the processes whose leases run: all they want when it fits; else
-- each gets its demand up to an equal share, and the rest goes to those
-- wanting more, in proportion to what they want beyond it; one unit at
-- least, as the share rounds down (U - held bounds the grant).
local function fair(w)
  local eq = U / n
  if sum - want + w <= U or w <= eq then return w end
  local surplus, excess = 0, w - eq
  for _, c in pairs(ents) do
    if now < c[2] then
      if c[5] <= eq then surplus = surplus + eq - c[5] else excess = excess + c[5] - eq end
    end
  end
  return math.max(math.floor(eq + surplus * (w - eq) / excess), 1)
end
local target = fair(want)
local g = math.max(math.min(target, U - held), 0)
if fresh then -- keep at most what it still holds: others may hold what this Redis forgot
  local live = 0
  if rr > 0 then live = rg end
  if me[2] > now and me[1] > live then live = me[1] end
  g = math.min(g, live)
end
local retry = 0
if g < target then
  if fresh then retry = life + 1000000 - up
  elseif next_ > 0 then retry = next_ - now end
end
local e = now + L + lead
if stop then e = now end
-- The claim kept beyond the new grant: each older grant or claim larger
-- than it, until that one ends (one span of values, the largest, to the
-- latest end: stricter, never looser).
local hold, until_ = 0, 0
for _, c in ipairs({{me[1], me[2] + span}, {me[3], me[4]}, {rg, now + rr + span}, {rh, now + rhr}}) do
  if now < c[2] and c[1] > g then
    if c[1] > hold then hold = c[1] end
    if c[2] > until_ then until_ = c[2] end
  end
end
redis.call('HSET', KEYS[1], id, string.format('%d %d %d %d %d', g, e, hold, until_, want))
if not fresh then redis.call('HSET', KEYS[1], '!ok', '1') end
local last = e + span
for _, c in pairs(ents) do last = math.max(last, c[2] + span, c[4]) end
if until_ > last then last = until_ end
redis.call('PEXPIRE', KEYS[1], math.ceil((last - now) / 1000) + 1)

-- The key's pause (see luaThrottle): its end, generation and half-open flag.
local pu, pg, ph = 0, 0, 0
local th = redis.call('GET', KEYS[2])
if th then
  local x = {string.match(th, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
  pu, pg = tonumber(x[1]) or 0, tonumber(x[3]) or 0
  if not x[8] or tonumber(x[6]) == 1 then ph = 1 end -- 1: a probe goes first; unreadable: let a decision repair it
end
-- The key's learned pace (see luaLearned): its interval at now. A key of
-- another type reads as none.
local lp = 0
do
  local lv = redis.pcall('GET', KEYS[3])
  if type(lv) ~= 'string' then lv = false end
$$learned
$$interval
  lp = pi
end
local rest = 0
if pu > now then rest = math.min(pu - now, 86400000000) end
local hr = 0
if until_ > now then hr = until_ - now end
local fr = 0
if fresh then fr = 1 end
-- How much more it would get now wanting all: a spent share asks at once.
local tall = fair(U)
if fresh then tall = g end
local free = math.max(math.min(tall, U - held) - g, 0)
return {g, L + lead, hold, hr, retry, rest, pg, ph, fr, free, lp}
