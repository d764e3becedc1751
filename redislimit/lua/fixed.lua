-- Fixed window: a$j the window's index (-1: none), b$j its count.
-- Sets x$j, y$j, c$j, z$j and the state a$j, b$j, repaired.
--- @read
local x$j, y$j, c$j, z$j, a$j, b$j = ARGV[$x] + 0, ARGV[$y] + 0, ARGV[$c] + 0, ARGV[$z] + 0, -1, 0
if mg then z$j = math.min(mg, ARGV[$t] + 0) end
$$get-pair
if v[$v] and not (a$j and b$j and a$j * x$j <= now + c$j - x$j and b$j >= 0 and b$j <= y$j) then
  if a$j and a$j * x$j > now + c$j - x$j then a$j = math.floor((now + c$j - x$j) / x$j)
  elseif not (a$j and a$j * x$j <= now + c$j - x$j) then a$j, b$j = math.floor(now / x$j), y$j end
  if not (b$j and b$j >= 0 and b$j <= y$j) then b$j = y$j end
$$set-pair
end
-- Raises t to the earliest instant the part admits.
--- @earliest
do
  local w, r = math.floor(t / x$j), nil
  if w > a$j or (w == a$j and b$j < y$j) then r = t
  elseif w < a$j and b$j < y$j then r = a$j * x$j
  else r = (math.max(w, a$j) + 1) * x$j end
  if z$j > 0 and r - math.floor(r / x$j) * x$j >= x$j - z$j then r = (math.floor(r / x$j) + 1) * x$j end
  if r > t then t = r end
end
-- Books the part at t.
--- @book
do
  local w, n = math.floor(t / x$j), 1
  if w <= a$j then w, n = a$j, b$j + 1 end
$$set-pair
end
