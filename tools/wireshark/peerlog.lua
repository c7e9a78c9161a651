-- Wireshark dissector for Peerlog captures (docs/PROTOCOL.md §17, docs/TOOLS.md).
--
-- A Peerlog capture is pcapng whose interfaces have link type 147 (LINKTYPE_USER0). Each
-- packet is a 76-byte record header (version, kind, direction, flags, connection, local and
-- peer device keys) followed by a decrypted sync message (deterministic CBOR), a peer
-- certificate (connection opened) or a close reason.
--
-- Use:  wireshark -X lua_script:tools/wireshark/peerlog.lua capture.pcapng
--       tshark -X lua_script:tools/wireshark/peerlog.lua -r capture.pcapng -V
-- or copy this file to ~/.local/lib/wireshark/plugins/.
--
-- Written for Wireshark 3.6–4.x (Lua 5.2, bit32). Receipt CIDs are computed here (SHA-256 of
-- the receipt payload), independently of the Swift code that wrote the capture.

local bit = bit32 or bit

local peerlog = Proto("peerlog", "Peerlog protocol")

local kinds = { [0] = "message", [1] = "opened", [2] = "closed" }
local directions = { [0] = "inbound", [1] = "outbound" }

local f = {
  version = ProtoField.uint8("peerlog.version", "Record version"),
  kind = ProtoField.uint8("peerlog.kind", "Kind", base.DEC, kinds),
  direction = ProtoField.uint8("peerlog.direction", "Direction", base.DEC, directions),
  flags = ProtoField.uint8("peerlog.flags", "Flags", base.HEX),
  bodies_omitted = ProtoField.bool("peerlog.bodies_omitted", "Receipt bodies omitted"),
  connection = ProtoField.uint64("peerlog.connection", "Connection"),
  localdev = ProtoField.string("peerlog.local", "Local device"),
  peerdev = ProtoField.string("peerlog.peer", "Peer device"),
  type = ProtoField.string("peerlog.type", "Message type"),
  group = ProtoField.string("peerlog.group", "Group"),
  committed = ProtoField.string("peerlog.committed", "Committed seq"),
  credit = ProtoField.string("peerlog.credit", "Credit"),
  request_id = ProtoField.string("peerlog.request_id", "Request id"),
  versions = ProtoField.string("peerlog.versions", "Versions"),
  capabilities = ProtoField.string("peerlog.capabilities", "Capabilities"),
  error_code = ProtoField.string("peerlog.error.code", "Error code"),
  error_message = ProtoField.string("peerlog.error.message", "Error message"),
  reason = ProtoField.string("peerlog.reason", "Close reason"),
  cert_device = ProtoField.string("peerlog.certificate.device", "Certificate device"),
  cert_identity = ProtoField.string("peerlog.certificate.identity", "Certificate identity"),
  cert_name = ProtoField.string("peerlog.certificate.name", "Certificate name"),
  receipt_cid = ProtoField.string("peerlog.receipt.cid", "Receipt CID"),
  receipt_type = ProtoField.string("peerlog.receipt.type", "Receipt type"),
  receipt_author = ProtoField.string("peerlog.receipt.author", "Receipt author"),
  receipt_counter = ProtoField.string("peerlog.receipt.counter", "Receipt counter"),
  receipt_sealed = ProtoField.string("peerlog.receipt.sealed", "Sealed under epoch key (§22.3)"),
  envelope_cid = ProtoField.string("peerlog.envelope.cid", "Envelope receipt CID"),
  envelope_seq = ProtoField.string("peerlog.envelope.seq", "Envelope seq"),
  envelope_sequencer = ProtoField.string("peerlog.envelope.sequencer", "Envelope sequencer"),
  envelope_term = ProtoField.string("peerlog.envelope.term", "Envelope term"),
  envelope_run = ProtoField.string("peerlog.envelope.run", "Envelope run (batched, §3.5)"),
  field = ProtoField.string("peerlog.field", "Field"),
}
peerlog.fields = {}
for _, v in pairs(f) do table.insert(peerlog.fields, v) end

local ef_malformed = ProtoExpert.new("peerlog.malformed", "Malformed Peerlog record", expert.group.MALFORMED, expert.severity.ERROR)
peerlog.experts = { ef_malformed }

---------------------------------------------------------------------------------------------
-- SHA-256 (FIPS 180-4), for receipt CIDs.

local K = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

local function sha256(msg)
  local band, bxor, bnot, rrotate, rshift = bit.band, bit.bxor, bit.bnot, bit.rrotate, bit.rshift
  local len = #msg
  local bits = len * 8
  local tail = { "\128", string.rep("\0", (55 - len) % 64) }
  for i = 7, 0, -1 do tail[#tail + 1] = string.char(math.floor(bits / 2 ^ (8 * i)) % 256) end
  msg = msg .. table.concat(tail)
  local H = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }
  local w = {}
  for chunk = 1, #msg, 64 do
    for i = 0, 15 do
      local a, b, c, d = msg:byte(chunk + i * 4, chunk + i * 4 + 3)
      w[i] = ((a * 256 + b) * 256 + c) * 256 + d
    end
    for i = 16, 63 do
      local x, y = w[i - 15], w[i - 2]
      local s0 = bxor(rrotate(x, 7), rrotate(x, 18), rshift(x, 3))
      local s1 = bxor(rrotate(y, 17), rrotate(y, 19), rshift(y, 10))
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) % 4294967296
    end
    local a, b, c, d, e, f_, g, h = H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]
    for i = 0, 63 do
      local S1 = bxor(rrotate(e, 6), rrotate(e, 11), rrotate(e, 25))
      local ch = bxor(band(e, f_), band(bnot(e), g))
      local t1 = h + S1 + ch + K[i + 1] + w[i]
      local S0 = bxor(rrotate(a, 2), rrotate(a, 13), rrotate(a, 22))
      local maj = bxor(band(a, b), band(a, c), band(b, c))
      h, g, f_, e, d, c, b, a = g, f_, e, (d + t1) % 4294967296, c, b, a, (t1 + S0 + maj) % 4294967296
    end
    H[1], H[2], H[3], H[4] = (H[1] + a) % 4294967296, (H[2] + b) % 4294967296, (H[3] + c) % 4294967296, (H[4] + d) % 4294967296
    H[5], H[6], H[7], H[8] = (H[5] + e) % 4294967296, (H[6] + f_) % 4294967296, (H[7] + g) % 4294967296, (H[8] + h) % 4294967296
  end
  local out = {}
  for i = 1, 8 do
    local v = H[i]
    out[i] = string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256, math.floor(v / 256) % 256, v % 256)
  end
  return table.concat(out)
end

---------------------------------------------------------------------------------------------
-- Names: multibase base32 (RFC 4648, lower case, no padding) with the "b" prefix.

local alphabet = "abcdefghijklmnopqrstuvwxyz234567"

local function base32(s)
  local out, buffer, nbits = { "b" }, 0, 0
  for i = 1, #s do
    buffer = buffer * 256 + s:byte(i)
    nbits = nbits + 8
    while nbits >= 5 do
      nbits = nbits - 5
      local index = math.floor(buffer / 2 ^ nbits) % 32
      out[#out + 1] = alphabet:sub(index + 1, index + 1)
      buffer = buffer % 2 ^ nbits
    end
  end
  if nbits > 0 then
    local index = (buffer * 2 ^ (5 - nbits)) % 32
    out[#out + 1] = alphabet:sub(index + 1, index + 1)
  end
  return table.concat(out)
end

local function cid_of(payload) return base32("\1\113\18\32" .. sha256(payload)) end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

---------------------------------------------------------------------------------------------
-- CBOR (RFC 8949), enough for deterministic Peerlog messages. Values are tables:
-- {k="uint", v=number|string}, {k="nint", v=...}, {k="bytes", v=s}, {k="text", v=s},
-- {k="array", v={...}}, {k="map", keys={...}, vals={...}}, {k="tag", tag=n, v=item},
-- {k="simple", v="true"|"false"|"null"|...}. Integers above 2^53 are kept as decimal text.

local MAX_DEPTH = 32

local function read_uint(s, pos, info)
  if info < 24 then return info, pos end
  local n = ({ [24] = 1, [25] = 2, [26] = 4, [27] = 8 })[info]
  if not n then error("unsupported additional information " .. info .. " at byte " .. (pos - 1)) end
  if pos + n - 1 > #s then error("truncated integer at byte " .. (pos - 1)) end
  if n == 8 then
    local hi = ((s:byte(pos) * 256 + s:byte(pos + 1)) * 256 + s:byte(pos + 2)) * 256 + s:byte(pos + 3)
    local lo = ((s:byte(pos + 4) * 256 + s:byte(pos + 5)) * 256 + s:byte(pos + 6)) * 256 + s:byte(pos + 7)
    if hi < 2097152 then return hi * 4294967296 + lo, pos + 8 end
    return tostring(UInt64.new(lo, hi)), pos + 8
  end
  local v = 0
  for i = 0, n - 1 do v = v * 256 + s:byte(pos + i) end
  return v, pos + n
end

local decode

decode = function(s, pos, depth)
  if depth > MAX_DEPTH then error("nesting deeper than " .. MAX_DEPTH) end
  if pos > #s then error("unexpected end at byte " .. (pos - 1)) end
  local ib = s:byte(pos)
  local major, info = math.floor(ib / 32), ib % 32
  pos = pos + 1
  if major == 7 then
    local simple = ({ [20] = "false", [21] = "true", [22] = "null", [23] = "undefined" })[info]
    if simple then return { k = "simple", v = simple }, pos end
    error("unsupported simple or float value 0x" .. string.format("%02x", ib))
  end
  local n
  n, pos = read_uint(s, pos, info)
  if major == 0 then return { k = "uint", v = n }, pos end
  if major == 1 then return { k = "nint", v = n }, pos end
  if major == 2 or major == 3 then
    if type(n) ~= "number" or pos + n - 1 > #s then error("string of " .. tostring(n) .. " bytes runs past the end") end
    return { k = major == 2 and "bytes" or "text", v = s:sub(pos, pos + n - 1) }, pos + n
  end
  if type(n) ~= "number" or n > #s then error("collection count " .. tostring(n) .. " exceeds the input") end
  if major == 4 then
    local items = {}
    for i = 1, n do items[i], pos = decode(s, pos, depth + 1) end
    return { k = "array", v = items }, pos
  end
  if major == 5 then
    local keys, vals = {}, {}
    for i = 1, n do
      keys[i], pos = decode(s, pos, depth + 1)
      vals[i], pos = decode(s, pos, depth + 1)
    end
    return { k = "map", keys = keys, vals = vals }, pos
  end
  local item
  item, pos = decode(s, pos, depth + 1)
  return { k = "tag", tag = n, v = item }, pos
end

local function decode_all(s)
  local ok, value, pos = pcall(decode, s, 1, 0)
  if not ok then return nil, value end
  if pos ~= #s + 1 then return nil, "trailing bytes after the CBOR item" end
  return value
end

local function get(map, key)
  if not map or map.k ~= "map" then return nil end
  for i, k in ipairs(map.keys) do
    if k.k == "text" and k.v == key then return map.vals[i] end
  end
  return nil
end

local function diag(v)
  if v == nil then return "?" end
  if v.k == "uint" then return tostring(v.v) end
  if v.k == "nint" then return "-1-" .. tostring(v.v) end
  if v.k == "bytes" then return "h'" .. hex(v.v) .. "'" end
  if v.k == "text" then return string.format("%q", v.v) end
  if v.k == "simple" then return v.v end
  if v.k == "tag" then
    if v.tag == 42 and v.v.k == "bytes" and #v.v.v == 37 then return "42(" .. base32(v.v.v:sub(2)) .. ")" end
    return tostring(v.tag) .. "(" .. diag(v.v) .. ")"
  end
  if v.k == "array" then
    local parts = {}
    for i, x in ipairs(v.v) do parts[i] = diag(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  local parts = {}
  for i, key in ipairs(v.keys) do parts[i] = diag(key) .. ": " .. diag(v.vals[i]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function text_of(v) return v and (v.k == "text" or v.k == "bytes") and v.v or nil end
local function num_of(v) return v and v.k == "uint" and tostring(v.v) or "?" end
local function id_of(v) return v and v.k == "bytes" and base32(v.v) or "?" end
local function short(id) return id:sub(2, 9) end

---------------------------------------------------------------------------------------------
-- Message fields.

local function add_certificate(tree, tvb, container)
  local payload = text_of(get(container, "certificate"))
  local cert = payload and decode_all(payload)
  if not cert then tree:add(f.field, tvb, "certificate: undecodable"); return nil end
  tree:add(f.cert_device, tvb, id_of(get(cert, "device")))
  tree:add(f.cert_identity, tvb, id_of(get(cert, "identity")))
  tree:add(f.cert_name, tvb, text_of(get(cert, "name")) or "?")
  return cert
end

local function add_receipt(tree, tvb, bytes, omitted)
  local container, err = decode_all(bytes)
  if not container then
    tree:add(f.field, tvb, "receipt: " .. err):add_proto_expert_info(ef_malformed)
    return "?"
  end
  if omitted then
    local cid = get(container, "cid")
    local cid_text = cid and cid.k == "tag" and cid.v.k == "bytes" and base32(cid.v.v:sub(2)) or "?"
    local sub = tree:add(peerlog, tvb, "Receipt " .. cid_text .. " (body omitted)")
    sub:add(f.receipt_cid, tvb, cid_text)
    sub:add(f.receipt_type, tvb, text_of(get(container, "type")) or "?")
    sub:add(f.receipt_author, tvb, id_of(get(container, "author")))
    sub:add(f.receipt_counter, tvb, num_of(get(container, "counter")))
    sub:add(f.field, tvb, "body: omitted (" .. num_of(get(container, "omitted")) .. " bytes)")
    return text_of(get(container, "type")) or "?"
  end
  local payload = text_of(get(container, "receipt"))
  local receipt = payload and decode_all(payload)
  if not receipt then
    tree:add(f.field, tvb, "receipt payload undecodable"):add_proto_expert_info(ef_malformed)
    return "?"
  end
  local cid = cid_of(payload)
  local rtype = text_of(get(receipt, "type")) or "?"
  local sub = tree:add(peerlog, tvb, "Receipt " .. cid .. " " .. rtype)
  sub:add(f.receipt_cid, tvb, cid)
  sub:add(f.receipt_type, tvb, rtype)
  sub:add(f.receipt_author, tvb, id_of(get(receipt, "author")))
  sub:add(f.receipt_counter, tvb, num_of(get(receipt, "counter")))
  sub:add(f.field, tvb, "hlc: " .. num_of(get(receipt, "hlc")))
  sub:add(f.field, tvb, "parents: " .. diag(get(receipt, "parents")))
  local body = get(receipt, "body")
  local k, n, c = get(body, "k"), get(body, "n"), get(body, "c")
  if rtype:sub(1, 6) ~= "group." and body and body.k == "map" and #body.keys == 3 and k and k.k == "bytes" and n and n.k == "bytes"
      and c and c.k == "bytes" then
    -- An encrypted group's body: ciphertext here; `peerlog capture annotate` puts the opened
    -- body in the packet's comment.
    sub:add(f.receipt_sealed, tvb, hex(k.v))
    sub:add(f.field, tvb, "body: sealed, " .. #c.v .. " bytes of ciphertext (opened bodies: packet comment, see `peerlog capture annotate`)")
  else
    sub:add(f.field, tvb, "body: " .. diag(body))
  end
  local cert = get(container, "certificate")
  if cert then add_certificate(sub:add(peerlog, tvb, "Author certificate"), tvb, cert) end
  return rtype
end

local function add_envelope(tree, tvb, bytes)
  local container = decode_all(bytes)
  local payload = container and text_of(get(container, "envelope"))
  local e = payload and decode_all(payload)
  if not e then
    tree:add(f.field, tvb, "envelope undecodable"):add_proto_expert_info(ef_malformed)
    return
  end
  local link = get(e, "cid")
  local cid = link and link.k == "tag" and link.v.k == "bytes" and base32(link.v.v:sub(2)) or "?"
  local seq = num_of(get(e, "seq"))
  -- A batched run item (§3.5) carries the signed run header; its fields describe the run.
  local run_bytes = text_of(get(e, "run"))
  local run = run_bytes and decode_all(run_bytes)
  local head = run or e
  local sub = tree:add(peerlog, tvb, "Envelope seq " .. seq .. " " .. cid .. (run and " (batched)" or ""))
  sub:add(f.envelope_seq, tvb, seq)
  sub:add(f.envelope_cid, tvb, cid)
  sub:add(f.envelope_sequencer, tvb, id_of(get(head, "sequencer")))
  sub:add(f.envelope_term, tvb, num_of(get(head, "term")))
  sub:add(f.field, tvb, "received_at: " .. num_of(get(head, "received_at")))
  if run_bytes and not run then
    sub:add(f.field, tvb, "run header undecodable"):add_proto_expert_info(ef_malformed)
  elseif run then
    local first, count = num_of(get(run, "first_seq")), num_of(get(run, "count"))
    local root = text_of(get(run, "root"))
    local path = get(e, "path")
    sub:add(f.envelope_run, tvb, "seqs " .. first .. " +" .. count .. ", root " .. (root and hex(root) or "?")
      .. ", path " .. (path and path.k == "array" and #path.v or "?") .. " hashes, run sha256 " .. hex(sha256(run_bytes)):sub(1, 16))
  end
end

local function list_items(v)
  local out = {}
  if v and v.k == "array" then
    for _, item in ipairs(v.v) do out[#out + 1] = item.k == "bytes" and item.v or "" end
  end
  return out
end

local function dissect_message(tree, tvb, data, omitted)
  local m, err = decode_all(data)
  if not m then
    tree:add(f.field, tvb, "undecodable message: " .. err):add_proto_expert_info(ef_malformed)
    return "undecodable"
  end
  local t = text_of(get(m, "t")) or "?"
  tree:add(f.type, tvb, t)
  local group = get(m, "group")
  local info = t
  if group then
    local gid = id_of(group)
    tree:add(f.group, tvb, gid)
    info = info .. " group " .. gid:sub(1, 13) .. "…"
  end
  if t == "hello" then
    local versions, caps, groups = {}, {}, {}
    for _, x in ipairs((get(m, "versions") or { v = {} }).v) do versions[#versions + 1] = num_of(x) end
    for _, x in ipairs((get(m, "capabilities") or { v = {} }).v) do caps[#caps + 1] = text_of(x) or "?" end
    for _, x in ipairs((get(m, "groups") or { v = {} }).v) do groups[#groups + 1] = id_of(x) end
    tree:add(f.versions, tvb, table.concat(versions, ","))
    tree:add(f.capabilities, tvb, table.concat(caps, ","))
    for _, g in ipairs(groups) do tree:add(f.group, tvb, g) end
    info = info .. " groups=" .. #groups
  elseif t == "vector" then
    tree:add(f.committed, tvb, num_of(get(m, "committed")))
    tree:add(f.field, tvb, "authors: " .. diag(get(m, "authors")))
    info = info .. " committed=" .. num_of(get(m, "committed"))
  elseif t == "receipts" or t == "envelopes" or t == "commits" then
    local receipts = t == "receipts" and list_items(get(m, "items")) or t == "commits" and list_items(get(m, "receipts")) or {}
    local envelopes = t == "envelopes" and list_items(get(m, "items")) or t == "commits" and list_items(get(m, "envelopes")) or {}
    for _, r in ipairs(receipts) do add_receipt(tree, tvb, r, omitted) end
    for _, e in ipairs(envelopes) do add_envelope(tree, tvb, e) end
    info = info .. " " .. #receipts .. " receipts " .. #envelopes .. " envelopes"
  elseif t == "request" then
    tree:add(f.request_id, tvb, num_of(get(m, "id")))
    for _, key in ipairs({ "after", "from", "to" }) do
      if get(m, key) then tree:add(f.field, tvb, key .. ": " .. num_of(get(m, key))) end
    end
    if get(m, "author") then tree:add(f.field, tvb, "author: " .. id_of(get(m, "author"))) end
    if get(m, "cids") then tree:add(f.field, tvb, "cids: " .. diag(get(m, "cids"))) end
    info = info .. " id=" .. num_of(get(m, "id"))
  elseif t == "credit" then
    tree:add(f.credit, tvb, num_of(get(m, "n")))
    info = info .. " n=" .. num_of(get(m, "n"))
  elseif t == "done" then
    tree:add(f.request_id, tvb, num_of(get(m, "id")))
  elseif t == "election" then
    local kind = text_of(get(m, "kind")) or "?"
    tree:add(f.field, tvb, "kind: " .. kind)
    tree:add(f.field, tvb, "term: " .. num_of(get(m, "term")))
    for _, key in ipairs({ "last_seq", "last_term", "prev_seq", "prev_term", "commit", "match" }) do
      if get(m, key) then tree:add(f.field, tvb, key .. ": " .. num_of(get(m, key))) end
    end
    for _, key in ipairs({ "granted", "success" }) do
      if get(m, key) then tree:add(f.field, tvb, key .. ": " .. diag(get(m, key))) end
    end
    if get(m, "entries") then tree:add(f.field, tvb, "entries: " .. diag(get(m, "entries"))) end
    info = info .. " " .. kind .. " term=" .. num_of(get(m, "term"))
  elseif t == "refused" then
    local items = (get(m, "items") or { v = {} }).v
    for _, pair in ipairs(items) do tree:add(f.field, tvb, "refused: " .. diag(pair)) end
    info = info .. " " .. #items .. " receipts"
  elseif t == "snapshot" then
    local function raw(key)
      local v = get(m, key)
      return v and v.k == "bytes" and v.v or ""
    end
    local bytes = #raw("snapshot")
    tree:add(f.field, tvb, "snapshot: " .. bytes .. " bytes (docs/PROTOCOL.md §23.1)")
    add_envelope(tree, tvb, raw("anchor"))
    add_receipt(tree, tvb, raw("anchor_receipt"), omitted)
    local keys = (get(m, "keys") or { v = {} }).v
    info = info .. " " .. bytes .. " bytes, " .. #keys .. " key receipts"
  elseif t:sub(1, 5) == "blob_" then
    -- docs/PROTOCOL.md §24.3: blob_get, blob_hashes, blob_chunk, blob_missing, blob_have.
    local blob = id_of(get(m, "blob"))
    tree:add(f.field, tvb, "blob: " .. blob)
    tree:add(f.request_id, tvb, num_of(get(m, "id")))
    info = info .. " " .. blob:sub(1, 9) .. "…"
    if t == "blob_get" then
      tree:add(f.field, tvb, "from: " .. num_of(get(m, "from")) .. ", count: " .. num_of(get(m, "count")))
      info = info .. " from=" .. num_of(get(m, "from")) .. " count=" .. num_of(get(m, "count"))
    elseif t == "blob_hashes" then
      local hashes = get(m, "hashes")
      local n = hashes and hashes.k == "bytes" and math.floor(#hashes.v / 32) or 0
      tree:add(f.field, tvb, "hashes: " .. n)
      info = info .. " " .. n .. " hashes"
    elseif t == "blob_chunk" then
      local data = get(m, "data")
      local bytes = data and data.k == "bytes" and #data.v or 0
      local omitted = get(m, "omitted")
      local size = omitted and (num_of(omitted) .. " bytes, omitted") or (bytes .. " bytes")
      tree:add(f.field, tvb, "index: " .. num_of(get(m, "index")) .. ", data: " .. size)
      info = info .. " index=" .. num_of(get(m, "index")) .. " " .. size
    elseif t == "blob_missing" then
      tree:add(f.field, tvb, "reason: " .. (text_of(get(m, "reason")) or "?"))
    elseif t == "blob_have" then
      tree:add(f.field, tvb, "size: " .. num_of(get(m, "size")) .. ", chunk: " .. num_of(get(m, "chunk")))
      info = info .. " size=" .. num_of(get(m, "size"))
    end
  elseif t == "unshared" then
    tree:add(f.field, tvb, "reason: " .. (text_of(get(m, "reason")) or "?"))
    info = info .. " " .. (text_of(get(m, "reason")) or "?")
  elseif t == "error" then
    tree:add(f.error_code, tvb, text_of(get(m, "code")) or "?")
    tree:add(f.error_message, tvb, text_of(get(m, "message")) or "?")
    info = info .. " " .. (text_of(get(m, "code")) or "?")
  end
  return info
end

---------------------------------------------------------------------------------------------

function peerlog.dissector(tvb, pinfo, root)
  pinfo.cols.protocol = "Peerlog"
  local tree = root:add(peerlog, tvb())
  if tvb:len() < 76 then
    tree:add_proto_expert_info(ef_malformed, "record shorter than its 76-byte header")
    return
  end
  tree:add(f.version, tvb(0, 1))
  local kind = tvb(1, 1):uint()
  local direction = tvb(2, 1):uint()
  tree:add(f.kind, tvb(1, 1))
  tree:add(f.direction, tvb(2, 1))
  tree:add(f.flags, tvb(3, 1))
  local omitted = bit.band(tvb(3, 1):uint(), 1) == 1
  tree:add(f.bodies_omitted, tvb(3, 1), omitted)
  tree:add(f.connection, tvb(4, 8))
  local localdev, peerdev = base32(tvb:raw(12, 32)), base32(tvb:raw(44, 32))
  tree:add(f.localdev, tvb(12, 32), localdev)
  tree:add(f.peerdev, tvb(44, 32), peerdev)
  pinfo.cols.src = short(direction == 1 and localdev or peerdev)
  pinfo.cols.dst = short(direction == 1 and peerdev or localdev)
  local arrow = direction == 1 and "→ " or "← "
  local data = tvb:len() > 76 and tvb:raw(76) or ""
  local body = tvb:len() > 76 and tvb(76) or tvb(0, 0)
  if kind == 0 then
    pinfo.cols.info = arrow .. dissect_message(tree, body, data, omitted)
  elseif kind == 1 then
    tree:add(f.type, body, "opened")
    local container = decode_all(data)
    local cert = container and add_certificate(tree, body, container)
    pinfo.cols.info = "opened (" .. (direction == 1 and "dialed" or "accepted") .. ") " .. (cert and text_of(get(cert, "name")) or "?")
  elseif kind == 2 then
    tree:add(f.type, body, "closed")
    tree:add(f.reason, body, data)
    pinfo.cols.info = data:find("^closed") and data or ("closed: " .. data)
  else
    tree:add_proto_expert_info(ef_malformed, "unknown record kind " .. kind)
  end
end

DissectorTable.get("wtap_encap"):add(wtap_encaps and wtap_encaps.USER0 or wtap.USER0, peerlog)
