-- The start of the scripts off the hot path (cancel.lua, depart.lua):
-- the clock, and the helpers they call.
--- @head
$$now
local function get2(key, gap)
  local v, a, b = redis.call('GET', key), nil, nil
$$get-pair
  return a, b
end
local function set2(key, a, b, us, gap)
$$set-pair
end
local function expireIn(key, us)
$$expire-in
end
