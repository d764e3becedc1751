-- Records how a request ended (settleScript in scripts.go).
--- @settle
$$now

local pgen, plea, probe, pause, resp =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ch, key = ARGV[6], ARGV[7]
local cut, ci, left, reset, bucket, hz =
  tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local track, pst, quoted, top = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[19])
local th = redis.call('GET', KEYS[1])
local lv = redis.call('GET', KEYS[2])
if pause <= 0 and reset <= 0 and not th then return {-1, 0, 0} end
$$throttle
$$learned
local lw = lbad
local mine = probe == 1 and q > now and pid == plea
local msg = nil
if pause > 0 then
  local widened = false
  if pgen == g and track == 1 and pst == 0 and quoted == 0 then
    local mg = 0
$$margin
    if mg < top then md, mt, lw, widened = math.min(math.max(2 * mg, $minWiden), top), now, true, true end
  end
  if cut == 1 and pgen == g and not widened then
$$rate
    if ar <= 0 then ar = 1e6 / ci end
    as, aw, ac, lw = now, math.floor(ar * 1e6), ci, true
  end
  if pgen == g then s = s + 1 end
  if mine then q, pr, msg = 0, pr + 1, 'a ' end
  if not (pgen ~= g and u <= now and h == 0) and now + pause > u then
    u, l, g, h, msg = now + pause, pause, g + 1, 1, 'p '
    if q <= now then q = 0 end
  end
elseif resp == 1 then
  if mine then q, msg = 0, 'a ' end
  s = 0
  if u <= now and q <= now then h = 0 end
elseif mine then
  q, msg = now, 'a '
end
if reset > 0 then
  local till, old = now + reset, false
  if qi > 0 and qu > now then
    if bucket ~= qb then old = left > 0 and math.max(math.floor(reset / (left + 1)), 1) <= qi
    elseif till < qu - $tolerance then old = true
    elseif till <= qu + $tolerance then
      old = left > qn
      till = math.min(till, qu) -- the same window: the earliest reset
    end
  end
  if not old then
    lw = true
    if left == 0 then
      qi, qu, qn, qb = 0, 0, 0, 0
      if till > u then
        u, l, g, msg = till, till - now, g + 1, 'p '
        if h == 0 then h = 2 end
        if q <= now then q = 0 end
      end
    else
      qi, qu, qn, qb = math.max(math.floor((till - now) / (left + 1)), 1), till, left, bucket
      if now > ql then ql = now end
    end
  end
end
if msg == 'p ' and ql > now then ql, lw = now, true end
if th or msg then
$$keep-throttle
end
if lw then
$$keep-learned
end
if msg == 'p ' then redis.call('PUBLISH', ch, msg .. string.format('%d', g) .. ' ' .. key)
elseif msg then redis.call('PUBLISH', ch, msg .. string.format('%d', pr) .. ' ' .. key) end
$$interval
local rest = 0
if u > now then rest = u - now end
return {pi, rest, g}
