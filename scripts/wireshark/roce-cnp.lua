-- SPDX-License-Identifier: GPL-2.0-or-later
--
-- roce-cnp.lua: RoCEv2's Congestion Notification Packet (BTH OpCode
-- 0x81) in Wireshark and tshark.  Wireshark's InfiniBand dissector
-- (4.0, Debian 12's) decodes a CNP's BTH but names OpCode 129 "Unknown"
-- and leaves the rest undecoded; this post-dissector adds what the
-- RoCEv2 annex gives a CNP (docs/device-spec.md 9.1.2: "The CNP"):
--
--   roce_cnp.destqp     the BTH's DestQP: the QP the CNP slows down
--   roce_cnp.becn       the BTH's BECN bit, set in every CNP
--   roce_cnp.pkey       the BTH's P_Key (0xffff)
--   roce_cnp.reserved   the 16 reserved bytes after the BTH (zero)
--   roce_cnp.nonzero    expert note when they are not zero
--
-- and names the frame "CNP" in the protocol and info columns.  Use:
--
--   tshark -X lua_script:scripts/wireshark/roce-cnp.lua -r FILE -Y roce_cnp
--
-- or copy it into Wireshark's personal plugins folder.

local cnp = Proto("roce_cnp", "RoCEv2 Congestion Notification Packet")

local f_destqp = ProtoField.uint24("roce_cnp.destqp", "DestQP", base.HEX)
local f_becn = ProtoField.bool("roce_cnp.becn", "BECN", 8, nil, 0x40)
local f_pkey = ProtoField.uint16("roce_cnp.pkey", "P_Key", base.HEX)
local f_reserved = ProtoField.bytes("roce_cnp.reserved", "Reserved")
cnp.fields = { f_destqp, f_becn, f_pkey, f_reserved }

local e_nonzero = ProtoExpert.new("roce_cnp.nonzero",
	"CNP reserved bytes are not zero", expert.group.MALFORMED,
	expert.severity.WARN)
local e_short = ProtoExpert.new("roce_cnp.short",
	"CNP shorter than BTH, 16 reserved bytes and ICRC",
	expert.group.MALFORMED, expert.severity.ERROR)
cnp.experts = { e_nonzero, e_short }

local bth_opcode = Field.new("infiniband.bth.opcode")

local CNP_OPCODE = 0x81
local BTH_LEN = 12
local RESERVED_LEN = 16
local ICRC_LEN = 4

function cnp.dissector(tvb, pinfo, tree)
	local ops = { bth_opcode() }

	-- A frame with more than one BTH (a tunnel) is judged by its last.
	local op = ops[#ops]
	if not op or op.value ~= CNP_OPCODE then
		return
	end
	-- The field's offset is in the frame's bytes, which tvb holds.
	local bth = op.offset
	local t = tree:add(cnp, tvb:range(bth))
	pinfo.cols.protocol:set("RoCE CNP")
	if tvb:len() < bth + BTH_LEN + RESERVED_LEN + ICRC_LEN then
		t:add_proto_expert_info(e_short)
		pinfo.cols.info:set("CNP (short)")
		return
	end
	local destqp = tvb:range(bth + 5, 3)
	t:add(f_destqp, destqp)
	t:add(f_becn, tvb:range(bth + 4, 1))
	t:add(f_pkey, tvb:range(bth + 2, 2))
	local rsv = tvb:range(bth + BTH_LEN, RESERVED_LEN)
	local ri = t:add(f_reserved, rsv)
	for i = 0, RESERVED_LEN - 1 do
		if rsv:range(i, 1):uint() ~= 0 then
			ri:add_proto_expert_info(e_nonzero)
			break
		end
	end
	pinfo.cols.info:set(string.format("CNP to QP 0x%06x", destqp:uint()))
end

register_postdissector(cnp)
