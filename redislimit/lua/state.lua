-- The fragments the scripts share. Each section (a line "--- @name")
-- is placed where a script needs it, inline, with its $placeholders
-- filled (see fill in scripts.go). A line "$$name" is replaced by another
-- fragment. Lines of comments, as these, are not sent to Redis.
-- Redis's clock, in µs.
--- @now
local tm = redis.call('TIME')
local now = tm[1] * 1000000 + tm[2]
-- Reads the string $v (false: absent) into $a and $b: "a b", or "a"
-- alone ($$else: b = a - gap, or nil). What is not a number reads as nil.
--- @get-pair
if $v then
  local sp = string.find($v, ' ', 1, true)
  if sp then $a, $b = tonumber(string.sub($v, 1, sp - 1)), tonumber(string.sub($v, sp + 1))
$$else
end
-- get-pair's $$else without a gap, and with one.
--- @get-pair-else
  else $a, $b = nil, nil end
--- @get-pair-else-gap
  else $a = tonumber($v) $b = $a and $a - $gap end
-- Writes $val to $key with a TTL of $us µs (and 1 ms more), or deletes it.
--- @set
do
  local us = $us
  if us <= 0 then redis.call('DEL', $key)
  else redis.call('SET', $key, $val, 'PX', math.ceil(us / 1000) + 1) end
end
-- Writes $a and $b to $key as set does: "a b", or ($$elseif) "a"
-- alone when b = a - gap.
--- @set-pair
do
  local us = $us
  if us <= 0 then redis.call('DEL', $key)
$$elseif
  else redis.call('SET', $key, string.format('%d %d', $a, $b), 'PX', math.ceil(us / 1000) + 1) end
end
-- set-pair's $$elseif, with a gap.
--- @set-pair-elseif
  elseif $gap and $b == $a - $gap then redis.call('SET', $key, $a, 'PX', math.ceil(us / 1000) + 1)
-- Gives $key a TTL of $us µs, or deletes it.
--- @expire-in
do
  local us = $us
  if us <= 0 then redis.call('DEL', $key)
  else redis.call('PEXPIRE', $key, math.ceil(us / 1000) + 1) end
end
-- Reads the throttle $v into u, l, g, s, pr, h, q, pid; sets bad when
-- it repaired them. $P is the longest pause, $N the largest count.
--- @throttle
local u, l, g, s, pr, h, q, pid, bad = 0, 0, 0, 0, 0, 0, 0, 0, false
if $v then
  local f = {string.match($v, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')}
  u, l, g, s = tonumber(f[1]) or 0, tonumber(f[2]) or 0, tonumber(f[3]) or 0, tonumber(f[4]) or 0
  pr, h, q, pid = tonumber(f[5]) or 0, tonumber(f[6]) or 0, tonumber(f[7]) or 0, tonumber(f[8]) or 0
  if not (f[8] and l >= 0 and l <= $P and u <= now + l and q <= now + $P and (h == 0 or h == 1 or h == 2) and
      g >= 0 and g <= $N and s >= 0 and s <= $N and pr >= 0 and pr <= $N and pid >= 0 and pid <= $N) then
    bad = true
    if not (l >= 0) then l = 0 elseif l > $P then l = $P end
    if not (u <= now + l) then u = now + l end
    if not (q <= now + $P) then q = now + $P end
    if not (h == 0 or h == 1 or h == 2) then h = 1 end
    if not (g >= 0 and g <= $N) then g = 0 end
    if not (s >= 0 and s <= $N) then s = 0 end
    if not (pr >= 0 and pr <= $N) then pr = 0 end
    if not (pid >= 0 and pid <= $N) then pid = 0 end
  end
end
-- Reads the learned record $v into qi, qu, ql, qn, qb (the quota's
-- pace), as, aw, ac (the adaptive rate), md, mt (the widened margin);
-- sets lbad when it repaired them.
--- @learned
local qi, qu, ql, qn, qb, as, aw, ac, md, mt, lbad = 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false
if $v then
  local f = {string.match($v, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)')}
  qi, qu, ql, qn = tonumber(f[1]) or -1, tonumber(f[2]) or -1, tonumber(f[3]) or -1, tonumber(f[4]) or -1
  qb, as, aw, ac = tonumber(f[5]) or -1, tonumber(f[6]) or -1, tonumber(f[7]) or -1, tonumber(f[8]) or -1
  if not (qi >= 0 and qi <= $P and qu >= 0 and qu <= now + $P and ql >= 0 and ql <= now + $H and qn >= 0 and qn <= $N and
      qb >= 0 and qb <= $N and as >= 0 and as <= now and aw >= 0 and aw <= $W and
      (as == 0 and aw == 0 and ac == 0 or as > 0 and ac >= 1 and ac <= $N)) then
    lbad = true
    if not (qi >= 0 and qi <= $P) then qi = qi > $P and $P or 0 end
    if not (qu >= 0 and qu <= now + $P) then qu = qu > now + $P and now + $P or 0 end
    if not (ql >= 0 and ql <= now + $H) then ql = ql > now + $H and now + $H or 0 end
    if not (qn >= 0 and qn <= $N) then qn = qn > $N and $N or 0 end
    if not (qb >= 0 and qb <= $N) then qb = 0 end
    if not (as >= 0 and as <= now) then as = as > now and now or 0 end
    if not (aw >= 0 and aw <= $W) then aw = aw > $W and $W or 0 end
    if not (as > 0 and ac >= 1 and ac <= $N) then as, aw, ac = 0, 0, 0 end
  end
  local f9, f10 = string.match($v, '^%S+ %S+ %S+ %S+ %S+ %S+ %S+ %S+ (%S+) (%S+)')
  if f9 then
    md, mt = tonumber(f9) or -1, tonumber(f10) or -1
    if not (md >= 0 and md <= $T and mt >= 0 and mt <= now) then
      lbad = true
      if not (md >= 0 and md <= $T) then md = md > $T and $T or 0 end
      if not (mt >= 0 and mt <= now) then mt = mt > now and now or 0 end
    end
  end
end
-- Sets ar to the adaptive rate at now (requests a second; 0: none).
--- @rate
local ar = 0
if as > 0 then
  local w, cl = aw / 1e6, 1e6 / ac
  local tt = (now - as) / 1e6 - (w * $K) ^ (1 / 3)
  local r = $C * tt * tt * tt + w
  if r < cl then ar = math.max(r, math.min($F, cl)) end
end
-- Sets pi to the learned pace's interval at now (µs; 0: none): the
-- slower of the quota's (while its window lasts) and the adaptive rate's.
--- @interval
$$rate
local pi = 0
if qi > 0 and qu > now then pi = qi end
if ar > 0 and math.ceil(1e6 / ar) > pi then pi = math.ceil(1e6 / ar) end
-- Sets le to when the learned record no longer matters.
--- @learned-end
local le = 0
if qi > 0 then le = qu end
if as > 0 then
  local w, cl = aw / 1e6, 1e6 / ac
  local e = as + ((w * $K) ^ (1 / 3) + (math.max(cl - w, 0) / $C) ^ (1 / 3)) * 1e6
  if e > le then le = e end
end
if md > 0 then
  local d, e, m0, run = md, mt, $m0, $run
  while d > m0 and run > 0 do d, e = math.floor(d / 2), e + run end
  if e > now + $P then e = now + $P end
  if e > le then le = e end
end
-- Sets mg to the key's departure margin at now (µs).
--- @margin
do
  local m0, run = $m0, $run
  mg = m0
  if md > m0 and run > 0 then
    local k = math.floor((now - mt) / run)
    if k < 60 then mg = math.max(math.floor(md / 2 ^ k), m0) end
  end
end
