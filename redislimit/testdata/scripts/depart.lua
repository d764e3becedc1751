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

local t, L, np = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for j = 1, np do
  local b = 3 + (j - 1) * 4
  local kind, x, cap, mem, key = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), ARGV[b + 4], KEYS[1 + j]
  local left = math.min(t + L, now + cap - x)
  if kind == 1 then
    local a, bb = get2(key, x)
    if a and bb and a <= now + cap then
      a = math.min(a + L, now + cap)
      set2(key, a, math.min(math.max(bb, left), a), a - now, x)
    end
  elseif kind == 2 then
    local w, c = get2(key, false)
    w, c = w or -1, c or 0
    local w0, w1 = math.floor(t / x), math.floor(left / x)
    if w1 > w0 then
      if w0 == w then c = math.max(0, c - 1) end
      if w1 > w then w, c = w1, 1 else c = c + 1 end
      set2(key, w, c, math.min((w + 1) * x - now, cap), false)
    end
  else
    if redis.call('ZREM', key, mem) == 1 then
      local _, dash = string.find(mem, '-', 1, true)
      redis.call('ZADD', key, left, string.format('%d', left) .. string.sub(mem, dash))
      local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      expireIn(key, math.min(last + x - now, cap))
    end
  end
end
return 0
