-- Moves a booking to where its request left (departScript in scripts.go).
--- @depart
$$head

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
