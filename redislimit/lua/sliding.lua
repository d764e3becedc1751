-- Sliding log: a sorted set of booked instants; a$j the latest entry,
-- b$j the entry the next booking waits for (-1: none), counted the widest
-- margin late while its request may not have left (within the widest
-- margin of now): its lateness is not known yet, and the booking, once
-- made, no longer moves with it.
-- Sets x$j, y$j, c$j and a$j, b$j, dropping old entries, repairing late ones.
--- @read
local x$j, y$j, c$j, a$j, b$j = ARGV[$x] + 0, ARGV[$y] + 0, ARGV[$c] + 0, 0, -1
if mg then
  local top = ARGV[$t] + 0
  x$j = x$j - math.min(ARGV[3] + 0, top) + math.min(mg, top)
end
do
  local e = redis.pcall('ZREMRANGEBYSCORE', KEYS[$k], '-inf', now - x$j)
  if type(e) == 'table' then return {5, 0, $k, 0} end
  local m = redis.call('ZCARD', KEYS[$k])
  if m > 0 then
    a$j = redis.call('ZRANGE', KEYS[$k], -1, -1, 'WITHSCORES')[2] + 0
    if a$j > now + c$j - x$j then
      local hi = now + c$j - x$j
      local far = redis.call('ZRANGEBYSCORE', KEYS[$k], '(' .. string.format('%d', hi), '+inf', 'LIMIT', 0, y$j)
      redis.call('ZREMRANGEBYSCORE', KEYS[$k], '(' .. string.format('%d', hi), '+inf')
      for _, f in ipairs(far) do redis.call('ZADD', KEYS[$k], hi, f) end
$$expire-in
      m, a$j = redis.call('ZCARD', KEYS[$k]), hi
    end
  end
  if m >= y$j then
    b$j = redis.call('ZRANGE', KEYS[$k], m - y$j, m - y$j, 'WITHSCORES')[2] + 0
    local top = ARGV[$t] + 0
    if b$j > now - top then b$j = b$j + math.min(mg or ARGV[3] + 0, top) end
  end
end
-- Raises t to the earliest instant the part admits.
--- @earliest
do
  local r = a$j
  if r < t then r = t end
  if b$j >= 0 and b$j + x$j > r then r = b$j + x$j end
  if r > t then t = r end
end
-- Books the part at t, as member m$j.
--- @book
local m$j = string.format('%d', t) .. '-' .. ARGV[$u]
redis.call('ZADD', KEYS[$k], t, m$j)
$$expire-in
