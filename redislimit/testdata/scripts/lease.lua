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
        e <= now + 6300000000 and hu <= now + 6300000000 + span) then
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

local fresh = false
if not ok then
  if up < 0 then
    local s = redis.call('INFO', 'server')
    up = (tonumber(string.match(s, 'uptime_in_seconds:(%d+)')) or 0) * 1000000
  end
  fresh = up < life + 1000000 -- the uptime counts whole seconds
end

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

local pu, pg, ph = 0, 0, 0
local th = redis.call('GET', KEYS[2])
if th then
  local x = {string.match(th, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
  pu, pg = tonumber(x[1]) or 0, tonumber(x[3]) or 0
  if not x[8] or tonumber(x[6]) == 1 then ph = 1 end -- 1: a probe goes first; unreadable: let a decision repair it
end
local lp = 0
do
  local lv = redis.pcall('GET', KEYS[3])
  if type(lv) ~= 'string' then lv = false end
local qi, qu, ql, qn, qb, as, aw, ac, md, mt, lbad = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false
if lv then
  local f = {string.match(lv, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)')}
  qi, qu, ql, qn = tonumber(f[1]) or -1, tonumber(f[2]) or -1, tonumber(f[3]) or -1, tonumber(f[4]) or -1
  qb, as, aw, ac = tonumber(f[5]) or -1, tonumber(f[6]) or -1, tonumber(f[7]) or -1, tonumber(f[8]) or -1
  if not (qi >= 0 and qi <= 86400000000 and qu >= 0 and qu <= now + 86400000000 and ql >= 0 and ql <= now + 86400000000 and qn >= 0 and qn <= 1125899906842624 and
      qb >= 0 and qb <= 1125899906842624 and as >= 0 and as <= now and aw >= 0 and aw <= 1000000000000 and
      (as == 0 and aw == 0 and ac == 0 or as > 0 and ac >= 1 and ac <= 1125899906842624)) then
    lbad = true
    if not (qi >= 0 and qi <= 86400000000) then qi = qi > 86400000000 and 86400000000 or 0 end
    if not (qu >= 0 and qu <= now + 86400000000) then qu = qu > now + 86400000000 and now + 86400000000 or 0 end
    if not (ql >= 0 and ql <= now + 86400000000) then ql = ql > now + 86400000000 and now + 86400000000 or 0 end
    if not (qn >= 0 and qn <= 1125899906842624) then qn = qn > 1125899906842624 and 1125899906842624 or 0 end
    if not (qb >= 0 and qb <= 1125899906842624) then qb = 0 end
    if not (as >= 0 and as <= now) then as = as > now and now or 0 end
    if not (aw >= 0 and aw <= 1000000000000) then aw = aw > 1000000000000 and 1000000000000 or 0 end
    if not (as > 0 and ac >= 1 and ac <= 1125899906842624) then as, aw, ac = 0, 0, 0 end
  end
  local f9, f10 = string.match(lv, '^%S+ %S+ %S+ %S+ %S+ %S+ %S+ %S+ (%S+) (%S+)')
  if f9 then
    md, mt = tonumber(f9) or -1, tonumber(f10) or -1
    if not (md >= 0 and md <= 86400000000 and mt >= 0 and mt <= now) then
      lbad = true
      if not (md >= 0 and md <= 86400000000) then md = md > 86400000000 and 86400000000 or 0 end
      if not (mt >= 0 and mt <= now) then mt = mt > now and now or 0 end
    end
  end
end
local ar = 0
if as > 0 then
  local w, cl = aw / 1e6, 1e6 / ac
  local tt = (now - as) / 1e6 - (w * 0.75) ^ (1 / 3)
  local r = 0.4 * tt * tt * tt + w
  if r < cl then ar = math.max(r, math.min(0.5, cl)) end
end
local pi = 0
if qi > 0 and qu > now then pi = qi end
if ar > 0 and math.ceil(1e6 / ar) > pi then pi = math.ceil(1e6 / ar) end
  lp = pi
end
local rest = 0
if pu > now then rest = math.min(pu - now, 86400000000) end
local hr = 0
if until_ > now then hr = until_ - now end
local fr = 0
if fresh then fr = 1 end
local tall = fair(U)
if fresh then tall = g end
local free = math.max(math.min(tall, U - held) - g, 0)
return {g, L + lead, hold, hr, retry, rest, pg, ph, fr, free, lp}
