local tm = redis.call('TIME')
local now = tm[1] * 1000000 + tm[2]
local v = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])
if v[3] then
  local ok, r = pcall(cmsgpack.unpack, v[3])
  if ok and type(r) == 'table' then return r end
end
if not (v[1] or v[2]) and redis.call('EXISTS', KEYS[1], KEYS[2]) > (v[1] and 1 or 0) + (v[2] and 1 or 0) then
  for i, k in ipairs({1, 2}) do
    if not v[i] and redis.call('TYPE', KEYS[k]).ok ~= 'none' then return {5, 0, k, 0} end
  end
end
local u, l, g, s, pr, h, q, pid, bad = 0, 0, 0, 0, 0, 0, 0, 0, false
if v[1] then
  local f = {string.match(v[1], '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
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
if bad then
do
  local us = math.max(u - now + math.max(l, 300000000), q - now)
  if us <= 0 then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], string.format('%d %d %d %d %d %d %d %d', u, l, g, s, pr, h, q, pid), 'PX', math.ceil(us / 1000) + 1) end
end
end
do
  local want = ARGV[8]
  if want and want + 0 >= 0 and pr ~= want + 0 then return {4, 0, g, pr} end
end
if u > now then return {1, u - now, g, pr} end
local probe, resume = 0, 0
if h == 1 then
  if q > now then return {2, q - now, g, pr} end
  probe = 1
  if q == 0 then resume = 1 end
elseif h == 2 then
  resume, h = 1, 0
end
local lr, t, mg = nil, now, nil
if v[2] then
local qi, qu, ql, qn, qb, as, aw, ac, md, mt, lbad = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false
if v[2] then
  local f = {string.match(v[2], '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)')}
  qi, qu, ql, qn = tonumber(f[1]) or -1, tonumber(f[2]) or -1, tonumber(f[3]) or -1, tonumber(f[4]) or -1
  qb, as, aw, ac = tonumber(f[5]) or -1, tonumber(f[6]) or -1, tonumber(f[7]) or -1, tonumber(f[8]) or -1
  if not (qi >= 0 and qi <= 86400000000 and qu >= 0 and qu <= now + 86400000000 and ql >= 0 and ql <= now + ARGV[2] and qn >= 0 and qn <= 1125899906842624 and
      qb >= 0 and qb <= 1125899906842624 and as >= 0 and as <= now and aw >= 0 and aw <= 1000000000000 and
      (as == 0 and aw == 0 and ac == 0 or as > 0 and ac >= 1 and ac <= 1125899906842624)) then
    lbad = true
    if not (qi >= 0 and qi <= 86400000000) then qi = qi > 86400000000 and 86400000000 or 0 end
    if not (qu >= 0 and qu <= now + 86400000000) then qu = qu > now + 86400000000 and now + 86400000000 or 0 end
    if not (ql >= 0 and ql <= now + ARGV[2]) then ql = ql > now + ARGV[2] and now + ARGV[2] or 0 end
    if not (qn >= 0 and qn <= 1125899906842624) then qn = qn > 1125899906842624 and 1125899906842624 or 0 end
    if not (qb >= 0 and qb <= 1125899906842624) then qb = 0 end
    if not (as >= 0 and as <= now) then as = as > now and now or 0 end
    if not (aw >= 0 and aw <= 1000000000000) then aw = aw > 1000000000000 and 1000000000000 or 0 end
    if not (as > 0 and ac >= 1 and ac <= 1125899906842624) then as, aw, ac = 0, 0, 0 end
  end
  local f9, f10 = string.match(v[2], '^%S+ %S+ %S+ %S+ %S+ %S+ %S+ %S+ (%S+) (%S+)')
  if f9 then
    md, mt = tonumber(f9) or -1, tonumber(f10) or -1
    if not (md >= 0 and md <= (ARGV[5] + 0) and mt >= 0 and mt <= now) then
      lbad = true
      if not (md >= 0 and md <= (ARGV[5] + 0)) then md = md > (ARGV[5] + 0) and (ARGV[5] + 0) or 0 end
      if not (mt >= 0 and mt <= now) then mt = mt > now and now or 0 end
    end
  end
end
local le = 0
if qi > 0 then le = qu end
if as > 0 then
  local w, cl = aw / 1e6, 1e6 / ac
  local e = as + ((w * 0.75) ^ (1 / 3) + (math.max(cl - w, 0) / 0.4) ^ (1 / 3)) * 1e6
  if e > le then le = e end
end
if md > 0 then
  local d, e, m0, run = md, mt, ARGV[3] + 0, ARGV[4] + 0
  while d > m0 and run > 0 do d, e = math.floor(d / 2), e + run end
  if e > now + 86400000000 then e = now + 86400000000 end
  if e > le then le = e end
end
do
  local m0, run = ARGV[3] + 0, ARGV[4] + 0
  mg = m0
  if md > m0 and run > 0 then
    local k = math.floor((now - mt) / run)
    if k < 60 then mg = math.max(math.floor(md / 2 ^ k), m0) end
  end
end
if mg <= ARGV[3] + 0 then mg = nil end
if lbad then
do
  local us = le - now
  if us <= 0 then redis.call('DEL', KEYS[2])
  else redis.call('SET', KEYS[2], string.format('%d %d %d %d %d %d %d %d %d %d', qi, qu, ql, qn, qb, as, aw, ac, md, mt), 'PX', math.ceil(us / 1000) + 1) end
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
if pi > 0 then
  if ql + pi > now then t = ql + pi end
  lr = {qi, qu, ql, qn, qb, as, aw, ac, md, mt, le}
end
end
local d = t - now
if d > 0 then
  local bound = ARGV[7]
  if bound and bound + 0 >= 0 and d >= bound + 0 then return {3, d, 1, pr} end
  if d > ARGV[2] + 0 then return {3, d, 5, pr} end
end
if lr then
  if t > lr[3] then lr[3] = t end
  redis.call('SET', KEYS[2], string.format('%d %d %d %d %d %d %d %d %d %d', unpack(lr, 1, 10)), 'PX', math.ceil(math.max(lr[11] - now, 1) / 1000) + 1)
end
local lease = 0
if probe == 1 then
  pid = pid + 1
  q = now + ARGV[1]
do
  local us = math.max(u - now + math.max(l, 300000000), q - now)
  if us <= 0 then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], string.format('%d %d %d %d %d %d %d %d', u, l, g, s, pr, h, q, pid), 'PX', math.ceil(us / 1000) + 1) end
end
  lease = pid
elseif resume == 1 then
do
  local us = math.max(u - now + math.max(l, 300000000), q - now)
  if us <= 0 then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], string.format('%d %d %d %d %d %d %d %d', u, l, g, s, pr, h, q, pid), 'PX', math.ceil(us / 1000) + 1) end
end
end
local r = {0, d, g, s, probe, lease, t}
if d == 0 and s == 0 and probe == 0 then r = {0, t, g} end
if ARGV[6] ~= '0' then redis.call('SET', KEYS[3], cmsgpack.pack(r), 'PX', ARGV[6]) end
return r
