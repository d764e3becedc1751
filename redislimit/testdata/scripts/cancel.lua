local tm = redis.call('TIME')
local now = tm[1] * 1000000 + tm[2]
local function get2(key, gap)
  local v, a, b = redis.call('GET', key), nil, nil
if v then
  local sp = string.find(v, ' ', 1, true)
  if sp then a, b = tonumber(string.sub(v, 1, sp - 1)), tonumber(string.sub(v, sp + 1))
  else a = tonumber(v) b = a and a - gap end
end
  return a, b
end
local function set2(key, a, b, us, gap)
do
  local us = us
  if us <= 0 then redis.call('DEL', key)
  elseif gap and b == a - gap then redis.call('SET', key, a, 'PX', math.ceil(us / 1000) + 1)
  else redis.call('SET', key, string.format('%d %d', a, b), 'PX', math.ceil(us / 1000) + 1) end
end
end
local function expireIn(key, us)
do
  local us = us
  if us <= 0 then redis.call('DEL', key)
  else redis.call('PEXPIRE', key, math.ceil(us / 1000) + 1) end
end
end

local t, probe, lease, np = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[6])
if t > now then
  for j = 1, np do
    local b = 6 + (j - 1) * 4
    local kind, x, cap, mem, key = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), ARGV[b + 4], KEYS[1 + j]
    if kind == 1 then
      local a, bb = get2(key, x)
      if a and bb and a <= now + cap then
        local give = x - math.max(0, bb - t)
        if give > 0 then a = math.max(a - give, 0) end
        set2(key, a, math.min(bb, a - x), a - now, x)
      end
    elseif kind == 2 then
      local w, c = get2(key, false)
      if w and c and math.floor(t / x) == w and c > 0 then set2(key, w, c - 1, math.min((w + 1) * x - now, cap), false) end
    else
      redis.call('ZREM', key, mem)
    end
  end
end
if probe == 1 then
  local th = redis.call('GET', KEYS[1])
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
  if th and pid == lease and q > now then
    q, bad = 0, true
    redis.call('PUBLISH', ARGV[4], 'a 0 ' .. ARGV[5])
  end
  if bad then
do
  local us = math.max(u - now + math.max(l, 300000000), q - now)
  if us <= 0 then redis.call('DEL', KEYS[1])
  else redis.call('SET', KEYS[1], string.format('%d %d %d %d %d %d %d %d', u, l, g, s, pr, h, q, pid), 'PX', math.ceil(us / 1000) + 1) end
end
  end
end
return 0
