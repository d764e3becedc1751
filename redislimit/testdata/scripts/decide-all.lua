local tm = redis.call('TIME')
local now = tm[1] * 1000000 + tm[2]
local v = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6])
if v[5] then
  local ok, r = pcall(cmsgpack.unpack, v[5])
  if ok and type(r) == 'table' then return r end
end
if not (v[2] and v[3]) and redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3], KEYS[5]) > (v[1] and 1 or 0) + (v[2] and 1 or 0) + (v[3] and 1 or 0) + (v[4] and 1 or 0) then
  for i, k in ipairs({1, 2, 3, 5}) do
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
  local want = ARGV[24]
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
if v[4] then
local qi, qu, ql, qn, qb, as, aw, ac, md, mt, lbad = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false
if v[4] then
  local f = {string.match(v[4], '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)')}
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
  local f9, f10 = string.match(v[4], '^%S+ %S+ %S+ %S+ %S+ %S+ %S+ %S+ (%S+) (%S+)')
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
  if us <= 0 then redis.call('DEL', KEYS[5])
  else redis.call('SET', KEYS[5], string.format('%d %d %d %d %d %d %d %d %d %d', qi, qu, ql, qn, qb, as, aw, ac, md, mt), 'PX', math.ceil(us / 1000) + 1) end
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
local x1, y1, c1, a1, b1 = ARGV[7] + 0, ARGV[8] + 0, ARGV[9] + 0, 0, 0
if mg then
  local k, top = y1 / x1, ARGV[11] + 0
  x1 = x1 + math.ceil((math.min(mg, top) - math.min(ARGV[3] + 0, top)) / ARGV[10])
  y1 = k * x1
end
if v[2] then
  local sp = string.find(v[2], ' ', 1, true)
  if sp then a1, b1 = tonumber(string.sub(v[2], 1, sp - 1)), tonumber(string.sub(v[2], sp + 1))
  else a1 = tonumber(v[2]) b1 = a1 and a1 - x1 end
end
if v[2] and not (a1 and b1 and a1 <= now + c1 and b1 <= a1) then
  if a1 and a1 > now + c1 then a1 = now + c1 elseif not (a1 and a1 <= now + c1) then a1 = now + y1 end
  if not (b1 and b1 <= a1) then b1 = a1 end
do
  local us = a1 - now
  if us <= 0 then redis.call('DEL', KEYS[2])
  elseif x1 and b1 == a1 - x1 then redis.call('SET', KEYS[2], a1, 'PX', math.ceil(us / 1000) + 1)
  else redis.call('SET', KEYS[2], string.format('%d %d', a1, b1), 'PX', math.ceil(us / 1000) + 1) end
end
end
if resume == 1 and a1 > u + y1 then a1 = u + y1 end
if probe == 1 and a1 < u + y1 - x1 then a1 = u + y1 - x1 end
local x2, y2, c2, z2, a2, b2 = ARGV[13] + 0, ARGV[14] + 0, ARGV[15] + 0, ARGV[16] + 0, -1, 0
if mg then z2 = math.min(mg, ARGV[17] + 0) end
if v[3] then
  local sp = string.find(v[3], ' ', 1, true)
  if sp then a2, b2 = tonumber(string.sub(v[3], 1, sp - 1)), tonumber(string.sub(v[3], sp + 1))
  else a2, b2 = nil, nil end
end
if v[3] and not (a2 and b2 and a2 * x2 <= now + c2 - x2 and b2 >= 0 and b2 <= y2) then
  if a2 and a2 * x2 > now + c2 - x2 then a2 = math.floor((now + c2 - x2) / x2)
  elseif not (a2 and a2 * x2 <= now + c2 - x2) then a2, b2 = math.floor(now / x2), y2 end
  if not (b2 and b2 >= 0 and b2 <= y2) then b2 = y2 end
do
  local us = (a2 + 1) * x2 - now
  if us <= 0 then redis.call('DEL', KEYS[3])
  else redis.call('SET', KEYS[3], string.format('%d %d', a2, b2), 'PX', math.ceil(us / 1000) + 1) end
end
end
local x3, y3, c3, a3, b3 = ARGV[18] + 0, ARGV[19] + 0, ARGV[20] + 0, 0, -1
if mg then
  local top = ARGV[21] + 0
  x3 = x3 - math.min(ARGV[3] + 0, top) + math.min(mg, top)
end
do
  local e = redis.pcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - x3)
  if type(e) == 'table' then return {5, 0, 4, 0} end
  local m = redis.call('ZCARD', KEYS[4])
  if m > 0 then
    a3 = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')[2] + 0
    if a3 > now + c3 - x3 then
      local hi = now + c3 - x3
      local far = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. string.format('%d', hi), '+inf', 'LIMIT', 0, y3)
      redis.call('ZREMRANGEBYSCORE', KEYS[4], '(' .. string.format('%d', hi), '+inf')
      for _, f in ipairs(far) do redis.call('ZADD', KEYS[4], hi, f) end
do
  local us = c3
  if us <= 0 then redis.call('DEL', KEYS[4])
  else redis.call('PEXPIRE', KEYS[4], math.ceil(us / 1000) + 1) end
end
      m, a3 = redis.call('ZCARD', KEYS[4]), hi
    end
  end
  if m >= y3 then
    b3 = redis.call('ZRANGE', KEYS[4], m - y3, m - y3, 'WITHSCORES')[2] + 0
    local top = ARGV[21] + 0
    if b3 > now - top then b3 = b3 + math.min(mg or ARGV[3] + 0, top) end
  end
end
local settled = false
for _ = 1, 16 do
local t0 = t
do
  local r = a1
  if r < t then r = t end
  r = r + x1 - y1
  if r > t then t = r end
end
do
  local w, r = math.floor(t / x2), nil
  if w > a2 or (w == a2 and b2 < y2) then r = t
  elseif w < a2 and b2 < y2 then r = a2 * x2
  else r = (math.max(w, a2) + 1) * x2 end
  if z2 > 0 and r - math.floor(r / x2) * x2 >= x2 - z2 then r = (math.floor(r / x2) + 1) * x2 end
  if r > t then t = r end
end
do
  local r = a3
  if r < t then r = t end
  if b3 >= 0 and b3 + x3 > r then r = b3 + x3 end
  if r > t then t = r end
end
if t == t0 then settled = true break end
end
if not settled then return {3, 0, 4, pr} end
local d = t - now
if d > 0 then
  if d > ARGV[12] + 0 then return {3, d, 2, pr} end
  local bound = ARGV[23]
  if bound and bound + 0 >= 0 and d >= bound + 0 then return {3, d, 1, pr} end
  if d > ARGV[2] + 0 then return {3, d, 5, pr} end
end
do
  local a, b = a1, b1
  if a < t then a = t end
  if b < t then b = t end
  a = a + x1
do
  local us = a - now
  if us <= 0 then redis.call('DEL', KEYS[2])
  elseif x1 and b == a - x1 then redis.call('SET', KEYS[2], a, 'PX', math.ceil(us / 1000) + 1)
  else redis.call('SET', KEYS[2], string.format('%d %d', a, b), 'PX', math.ceil(us / 1000) + 1) end
end
end
do
  local w, n = math.floor(t / x2), 1
  if w <= a2 then w, n = a2, b2 + 1 end
do
  local us = (w + 1) * x2 - now
  if us <= 0 then redis.call('DEL', KEYS[3])
  else redis.call('SET', KEYS[3], string.format('%d %d', w, n), 'PX', math.ceil(us / 1000) + 1) end
end
end
local m3 = string.format('%d', t) .. '-' .. ARGV[22]
redis.call('ZADD', KEYS[4], t, m3)
do
  local us = math.max(t, a3) + x3 - now
  if us <= 0 then redis.call('DEL', KEYS[4])
  else redis.call('PEXPIRE', KEYS[4], math.ceil(us / 1000) + 1) end
end
if lr then
  if t > lr[3] then lr[3] = t end
  redis.call('SET', KEYS[5], string.format('%d %d %d %d %d %d %d %d %d %d', unpack(lr, 1, 10)), 'PX', math.ceil(math.max(lr[11] - now, 1) / 1000) + 1)
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
local r = {0, d, g, s, probe, lease, t, '', '', m3}
if ARGV[6] ~= '0' then redis.call('SET', KEYS[6], cmsgpack.pack(r), 'PX', ARGV[6]) end
return r
