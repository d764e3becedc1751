-- Gives back a booking whose request will not leave, and the probe role
-- (cancelScript in scripts.go).
--- @cancel
$$head

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
$$throttle
  if th and pid == lease and q > now then
    q, bad = 0, true
    redis.call('PUBLISH', ARGV[4], 'a 0 ' .. ARGV[5])
  end
  if bad then
$$keep-throttle
  end
end
return 0
