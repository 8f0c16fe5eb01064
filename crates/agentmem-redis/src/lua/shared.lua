-- Helpers shared by every script (concatenated first: src/scripts.rs).

-- Runs `cmd key a1 a2 ...` over the flat list `args` in chunks of 1000 (an even number, so
-- field/value and score/member pairs stay whole; unpack() is bounded by the Lua C stack) and
-- returns the last reply, or the replies concatenated when `gather`.
local function chunked(cmd, key, args, gather)
  local i, count = 0, #args
  local out, last = {}, nil
  while i < count do
    local j = math.min(i + 1000, count)
    last = redis.call(cmd, key, unpack(args, i + 1, j))
    if gather then
      for _, v in ipairs(last) do
        out[#out + 1] = v
      end
    end
    i = j
  end
  if gather then
    return out
  end
  return last
end

-- Free text (checkpoint thread ids, entity names, …) as a part of a key name: keeps
-- `A-Z a-z 0-9 _ . -` and writes every other byte as `%XX` (uppercase hex), so two distinct
-- texts never give one name, and no part holds `:`, a brace (which would end a cluster hash
-- tag), a glob character or a space.
local function esc(s)
  return (string.gsub(s, '[^A-Za-z0-9_%.%-]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end

-- The separator of the parts of a member or a field: no text stored in parts holds NUL.
local Z = '\0'

-- `a NUL b` as a and b.
local function split2(s)
  local j = string.find(s, Z, 1, true)
  return string.sub(s, 1, j - 1), string.sub(s, j + 1)
end

-- `a NUL b NUL c` as a, b and c.
local function split3(s)
  local a, rest = split2(s)
  local b, c = split2(rest)
  return a, b, c
end

-- Byte order, as Rust compares (Lua's `<` follows the server's locale): how session ids,
-- checkpoint ids and the like are ordered.
local function byte_less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The builder of the keys under `prefix` (a key root and its kind's part, as `P .. ':g:e:'`):
-- a function from the last part of a key (already fit for a key name) to the whole key.
local function keys_under(prefix)
  return function(part)
    return prefix .. part
  end
end
