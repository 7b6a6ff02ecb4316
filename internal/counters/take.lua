-- Tollgate counters: the rate limits and budgets of one decision, checked and counted atomically.
-- KEYS[2i-1] is op i's counter; KEYS[2i] its idempotency record (the counter again when none).
-- ARGV[1] is the number of ops; op i's arguments start at ARGV[2 + 6(i-1)]:
--   kind ('r' rate limit, 'b' budget), limit (calls per window, or the budget's cap),
--   window (microseconds), amount (budget), required ('1': over its limit denies the call, and
--   then nothing is counted), idem ('1': KEYS[2i] is an idempotency record).
-- Returns three integers per op: allowed (0/1), idempotency (0 none, 1 replayed, 2 conflict), and
-- the budget's sum before the call.
-- Rate limits are GCRA (the theoretical arrival time, in microseconds of Redis' clock, is the
-- key's value): limit calls per window, bursts up to limit. Budgets are a hash {p = period index,
-- s = sum} reset at multiples of the window from the epoch; an idempotency record holds the
-- amount counted and lives one window.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local out = {}
local plan = {}
local ok = true
local function int(x) return string.format('%.0f', x) end
for i = 1, n do
  local a = 2 + (i - 1) * 6
  local kind, limit, win, amount = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local required, idem = ARGV[a + 4] == '1', ARGV[a + 5] == '1'
  local key = KEYS[2 * i - 1]
  local allowed, flag, used = 0, 0, 0
  if win <= 0 then
    allowed = 1
  elseif kind == 'r' then
    local interval = math.max(math.floor(win / math.max(limit, 1)), 1)
    local tat = tonumber(redis.call('GET', key) or '0') or 0
    if tat < now then tat = now end
    local nexttat = tat + interval
    if nexttat - now <= win then
      allowed = 1
      plan[i] = nexttat
    end
  else
    local period = math.floor(now / win)
    local h = redis.call('HMGET', key, 'p', 's')
    if tonumber(h[1]) == period then used = tonumber(h[2]) or 0 end
    local seen = false
    if idem then
      local prev = redis.call('GET', KEYS[2 * i])
      if prev then
        seen = true
        if tonumber(prev) == amount then
          allowed, flag = 1, 1
        else
          flag = 2
        end
      end
    end
    if not seen and used + amount <= limit then
      allowed = 1
      plan[i] = period
    end
  end
  if allowed == 0 and required then ok = false end
  out[#out + 1] = allowed
  out[#out + 1] = flag
  out[#out + 1] = used
end
if ok then
  for i = 1, n do
    local v = plan[i]
    if v then
      local a = 2 + (i - 1) * 6
      local key, win = KEYS[2 * i - 1], tonumber(ARGV[a + 2])
      if ARGV[a] == 'r' then
        redis.call('SET', key, int(v), 'PX', int(math.max(math.ceil((v - now) / 1000), 1)))
      else
        local amount = tonumber(ARGV[a + 3])
        local used = out[3 * i]
        local ends = (v + 1) * win
        redis.call('HSET', key, 'p', int(v), 's', int(used + amount))
        redis.call('PEXPIREAT', key, int(math.ceil(ends / 1000)))
        if ARGV[a + 5] == '1' then
          redis.call('SET', KEYS[2 * i], int(amount), 'PX', int(math.max(math.floor(win / 1000), 1)))
        end
      end
    end
  end
end
return out
