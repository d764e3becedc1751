local tm = redis.call('TIME')
local now = tm[1] * 1000000 + tm[2]

local pgen, plea, probe, pause, resp =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ch, key = ARGV[6], ARGV[7]
local cut, ci, left, reset, bucket, hz =
  tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local track, pst, quoted, top = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[19])
local th = redis.call('GET', KEYS[1])
local lv = redis.call('GET', KEYS[2])
if pause <= 0 and reset <= 0 and not th then return {-1, 0, 0} end
local u, l, g, s, pr, h, q, pid, bad = 0, 0, 0, 0, 0, 0, 0, 0, false
if th then
  local f = {string.match(th, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
  u, l, g, s = tonumber(f[1]) or 0, tonumber(f[2]) or 0, tonumber(f[3]) or 0, tonumber(f[4]) or 0
  pr, h, q, pid = tonumber(f[5]) or 0, tonumber(f[6]) or 0, tonumber(f[7]) or 0, tonumber(f[8]) or 0
  if not (f[8] and l >= 0 and l <= 86400000000 and u <= now + l and q <= now + 86400000000 and (h == 0 or h == 1 or h == 2) and
      g >= 0 and g <= 1125899906842624 and s >= 0 and s <= 1125899906842624 and pr >= 0 and pr <= 1125899906842624 and pid >= 0 and pid <= 1125899906842624) then
    bad = true
    if not (l >= 0) then l = 0 elseif l > 86400000000 then l = 86400000000 end
    if not (u <= now + l) then u = now + l end
    if not (q <= now + 86400000000) then q = now + 86400000000 end
    if not (h == 0 or h == 1 or h == 2) then h = 1 end
    if not (g >= 0 and g <= 1125899906842624) then g = 0 end
    if not (s >= 0 and s <= 1125899906842624) then s = 0 end
    if not (pr >= 0 and pr <= 1125899906842624) then pr = 0 end
    if not (pid >= 0 and pid <= 1125899906842624) then pid = 0 end
  end
end
local qi, qu, ql, qn, qb, as, aw, ac, md, mt, lbad = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false
if lv then
  local f = {string.match(lv, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)')}
  qi, qu, ql, qn = tonumber(f[1]) or -1, tonumber(f[2]) or -1, tonumber(f[3]) or -1, tonumber(f[4]) or -1
  qb, as, aw, ac = tonumber(f[5]) or -1, tonumber(f[6]) or -1, tonumber(f[7]) or -1, tonumber(f[8]) or -1
  if not (qi >= 0 and qi <= 86400000000 and qu >= 0 and qu <= now + 86400000000 and ql >= 0 and ql <= now + hz and qn >= 0 and qn <= 1125899906842624 and
      qb >= 0 and qb <= 1125899906842624 and as >= 0 and as <= now and aw >= 0 and aw <= 1000000000000 and
      (as == 0 and aw == 0 and ac == 0 or as > 0 and ac >= 1 and ac <= 1125899906842624)) then
    lbad = true
    if not (qi >= 0 and qi <= 86400000000) then qi = qi > 86400000000 and 86400000000 or 0 end
    if not (qu >= 0 and qu <= now + 86400000000) then qu = qu > now + 86400000000 and now + 86400000000 or 0 end
    if not (ql >= 0 and ql <= now + hz) then ql = ql > now + hz and now + hz or 0 end
    if not (qn >= 0 and qn <= 1125899906842624) then qn = qn > 1125899906842624 and 1125899906842624 or 0 end
    if not (qb >= 0 and qb <= 1125899906842624) then qb = 0 end
    if not (as >= 0 and as <= now) then as = as > now and now or 0 end
    if not (aw >= 0 and aw <= 1000000000000) then aw = aw > 1000000000000 and 1000000000000 or 0 end
    if not (as > 0 and ac >= 1 and ac <= 1125899906842624) then as, aw, ac = 0, 0, 0 end
  end
  local f9, f10 = string.match(lv, '^%S+ %S+ %S+ %S+ %S+ %S+ %S+ %S+ (%S+) (%S+)')
  if f9 then
    md, mt = tonumber(f9) or -1, tonumber(f10) or -1
    if not (md >= 0 and md <= top and mt >= 0 and mt <= now) then
      lbad = true
      if not (md >= 0 and md <= top) then md = md > top and top or 0 end
      if not (mt >= 0 and mt <= now) then mt = mt > now and now or 0 end
    end
  end
end
local lw = lbad
local mine = probe == 1 and q > now and pid == plea
local msg = nil
if pause > 0 then
  local widened = false
  if pgen == g and track == 1 and pst == 0 and quoted == 0 then
    local mg = 0
do
  local m0, run = tonumber(ARGV[17]), tonumber(ARGV[18])
  mg = m0
  if md > m0 and run > 0 then
    local k = math.floor((now - mt) / run)
    if k < 60 then mg = math.max(math.floor(md / 2 ^ k), m0) end
  end
end
    if mg < top then md, mt, lw, widened = math.min(math.max(2 * mg, 1500), top), now, true, true end
  end
  if cut == 1 and pgen == g and not widened then
local ar = 0
if as > 0 then
  local w, cl = aw / 1e6, 1e6 / ac
  local tt = (now - as) / 1e6 - (w * 0.75) ^ (1 / 3)
  local r = 0.4 * tt * tt * tt + w
  if r < cl then ar = math.max(r, math.min(0.5, cl)) end
end
    if ar <= 0 then ar = 1e6 / ci end
    as, aw, ac, lw = now, math.floor(ar * 1e6), ci, true
  end
  if pgen == g then s = s + 1 end
  if mine then q, pr, msg = 0, pr + 1, 'a ' end
  if not (pgen ~= g and u <= now and h == 0) and now + pause > u then
    u, l, g, h, msg = now + pause, pause, g + 1, 1, 'p '
    if q <= now then q = 0 end
  end
elseif resp == 1 then
  if mine then q, msg = 0, 'a ' end
  s = 0
  if u <= now and q <= now then h = 0 end
elseif mine then
  q, msg = now, 'a '
end
if reset > 0 then
  local till, old = now + reset, false
  if qi > 0 and qu > now then
    if bucket ~= qb then old = left > 0 and math.max(math.floor(reset / (left + 1)), 1) <= qi
    elseif till < qu - 1000000 then old = true
    elseif till <= qu + 1000000 then
      old = left > qn
      till = math.min(till, qu) -- the same window: the earliest reset
    end
  end
  if not old then
    lw = true
    if left == 0 then
      qi, qu, qn, qb = 0, 0, 0, 0
      if till > u then
        u, l, g, msg = till, till - now, g + 1, 'p '
        if h == 0 then h = 2 end
        if q <= now then q = 0 end
      end
    else
      qi, qu, qn, qb = math.max(math.floor((till - now) / (left + 1)), 1), till, left, bucket
      if now > ql then ql = now end
    end
  end
end
if msg == 'p ' and ql > now then ql, lw = now, true end
if th or msg then
do
  local us = math.max(u - now + math.max(l, 300000000), q - now)
  if us <= 0 then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], string.format('%d %d %d %d %d %d %d %d', u, l, g, s, pr, h, q, pid), 'PX', math.ceil(us / 1000) + 1) end
end
end
if lw then
do
local le = 0
if qi > 0 then le = qu end
if as > 0 then
  local w, cl = aw / 1e6, 1e6 / ac
  local e = as + ((w * 0.75) ^ (1 / 3) + (math.max(cl - w, 0) / 0.4) ^ (1 / 3)) * 1e6
  if e > le then le = e end
end
if md > 0 then
  local d, e, m0, run = md, mt, tonumber(ARGV[17]), tonumber(ARGV[18])
  while d > m0 and run > 0 do d, e = math.floor(d / 2), e + run end
  if e > now + 86400000000 then e = now + 86400000000 end
  if e > le then le = e end
end
do
  local us = le - now
  if us <= 0 then redis.call('DEL', KEYS[2])
  else redis.call('SET', KEYS[2], string.format('%d %d %d %d %d %d %d %d %d %d', qi, qu, ql, qn, qb, as, aw, ac, md, mt), 'PX', math.ceil(us / 1000) + 1) end
end
end
end
if msg == 'p ' then redis.call('PUBLISH', ch, msg .. string.format('%d', g) .. ' ' .. key)
elseif msg then redis.call('PUBLISH', ch, msg .. string.format('%d', pr) .. ' ' .. key) end
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
local rest = 0
if u > now then rest = u - now end
return {pi, rest, g}
