-- GCRA (token bucket, leaky bucket): a$j the theoretical arrival time,
-- b$j the latest booked instant (see algorithms in scripts.go).
-- Sets x$j, y$j, c$j and the state a$j, b$j, repaired; resumes after a pause.
--- @read
local x$j, y$j, c$j, a$j, b$j = ARGV[$x] + 0, ARGV[$y] + 0, ARGV[$c] + 0, 0, 0
if mg then
  local k, top = y$j / x$j, ARGV[$t] + 0
  x$j = x$j + math.ceil((math.min(mg, top) - math.min(ARGV[3] + 0, top)) / ARGV[$n])
  y$j = k * x$j
end
$$get-pair
if v[$v] and not (a$j and b$j and a$j <= now + c$j and b$j <= a$j) then
  if a$j and a$j > now + c$j then a$j = now + c$j elseif not (a$j and a$j <= now + c$j) then a$j = now + y$j end
  if not (b$j and b$j <= a$j) then b$j = a$j end
$$set-pair
end
if resume == 1 and a$j > u + y$j then a$j = u + y$j end
if probe == 1 and a$j < u + y$j - x$j then a$j = u + y$j - x$j end
-- Raises t to the earliest instant the part admits.
--- @earliest
do
  local r = a$j
  if r < t then r = t end
  r = r + x$j - y$j
  if r > t then t = r end
end
-- Books the part at t.
--- @book
do
  local a, b = a$j, b$j
  if a < t then a = t end
  if b < t then b = t end
  a = a + x$j
$$set-pair
end
