-- The decision (decideScript in scripts.go), in the order it runs: head,
-- pace, each part's read, the earliest instant (one part's, or a loop),
-- bound, each part's book, paced, lease, then a reply and remember.
-- The throttle first: paused, waiting for the probe, or electing this
-- request as the probe; a key of another type answers 5; a decision
-- sent again finds its reply ($dv of v).
--- @head
$$now
local v = redis.call('MGET', $keys, KEYS[$dk])
if v[$dv] then
  local ok, r = pcall(cmsgpack.unpack, v[$dv])
  if ok and type(r) == 'table' then return r end
end
if not ($all) and redis.call('EXISTS', $keys) > $present then
  for i, k in ipairs({$idx}) do
    if not v[i] and redis.call('TYPE', KEYS[k]).ok ~= 'none' then return {5, 0, k, 0} end
  end
end
$$throttle
if bad then
$$keep-throttle
end
do
  local want = ARGV[$want]
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
-- Declares t, the instant the decision books from, under the learned
-- pace; lr holds the record while a pace applies; mg the margin.
--- @pace
local lr, t, mg = nil, now, nil
if v[$lv] then
$$learned
$$learned-end
$$margin
if mg <= ARGV[3] + 0 then mg = nil end
if lbad then
$$set-learned
end
$$interval
if pi > 0 then
  if ql + pi > now then t = ql + pi end
  lr = {qi, qu, ql, qn, qb, as, aw, ac, md, mt, le}
end
end
-- The earliest instant every part admits: passes until none moves.
--- @earliest-loop
local settled = false
for _ = 1, 16 do
local t0 = t
$$earliest
if t == t0 then settled = true break end
end
if not settled then return {3, 0, 4, pr} end
-- Refuses a wait beyond the caller's bound ($bound) or the horizon.
--- @bound
local d = t - now
if d > 0 then
$$queue
  local bound = ARGV[$bound]
  if bound and bound + 0 >= 0 and d >= bound + 0 then return {3, d, 1, pr} end
  if d > ARGV[2] + 0 then return {3, d, 5, pr} end
end
-- A leaky bucket's queue bound ($z).
--- @queue
  if d > ARGV[$z] + 0 then return {3, d, 2, pr} end
-- Records the booking at t as the pace's latest.
--- @paced
if lr then
  if t > lr[3] then lr[3] = t end
  redis.call('SET', KEYS[$lk], string.format('%d %d %d %d %d %d %d %d %d %d', unpack(lr, 1, 10)), 'PX', math.ceil(math.max(lr[11] - now, 1) / 1000) + 1)
end
-- The probe's lease, and the throttle kept.
--- @lease
local lease = 0
if probe == 1 then
  pid = pid + 1
  q = now + ARGV[1]
$$keep-throttle
  lease = pid
elseif resume == 1 then
$$keep-throttle
end
-- The reply of a booking: in fewer elements when booked at once.
--- @reply
local r = {0, d, g, s, probe, lease, t}
if d == 0 and s == 0 and probe == 0 then r = {0, t, g} end
-- The reply of a booking with a sliding log: a member per part.
--- @reply-members
local r = {0, d, g, s, probe, lease, t, $members}
-- Keeps the reply r for ARGV[6] ms under the decision's key $dk (0: a
-- client that never sends a command twice keeps none).
--- @remember
if ARGV[6] ~= '0' then redis.call('SET', KEYS[$dk], cmsgpack.pack(r), 'PX', ARGV[6]) end
return r
