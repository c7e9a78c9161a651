import PeerlogCapture

/// One endpoint of a TCP connection.
package struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// IPv4 in dotted decimal, or IPv6 as eight hex groups (not compressed).
    package let address: String
    /// The TCP port.
    package let port: UInt16
    /// `address:port`, or `[address]:port` for IPv6.
    package var description: String { address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)" }
}

/// The TCP segments of a raw capture, reassembled into byte streams per direction.
/// Understands link types 0 (BSD loopback), 1 (Ethernet), 101 and 228/229 (raw IP),
/// 113 (Linux cooked) and 276 (Linux cooked v2), over IPv4 and IPv6.
package struct TCPStreams {
    /// One direction of a TCP connection.
    package struct Flow: Hashable, Sendable {
        /// The sending endpoint.
        package let source: Endpoint
        /// The receiving endpoint.
        package let destination: Endpoint
        /// The other direction of the same connection.
        package var reversed: Flow { Flow(source: destination, destination: source) }
    }

    /// One direction's bytes, with when each stretch arrived.
    package struct Stream: Sendable {
        /// The direction these bytes went.
        package let flow: Flow
        /// The payload from the stream's start (after the SYN, else from the lowest sequence number captured),
        /// retransmitted bytes dropped.
        package internal(set) var bytes: [UInt8] = []
        /// (end offset in `bytes`, packet time µs), ascending.
        var arrivals: [(end: Int, time: UInt64)] = []
        /// The capture holds this direction's SYN, so `bytes` starts at the true start of the stream.
        package internal(set) var sawSYN = false
        /// When this direction's first captured packet arrived, in microseconds since the Unix epoch.
        package let firstTime: UInt64

        /// When the byte at `offset` arrived.
        package func time(ofByte offset: Int) -> UInt64 {
            var lo = 0
            var hi = arrivals.count - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if arrivals[mid].end > offset { hi = mid } else { lo = mid + 1 }
            }
            return arrivals.isEmpty ? firstTime : arrivals[lo].time
        }
    }

    struct Segment {
        let flow: Flow
        let seq: UInt32
        let syn: Bool
        let payload: [UInt8]
        let time: UInt64
        let offset: Int
    }

    /// Every direction's stream, by flow.
    package private(set) var streams: [Flow: Stream] = [:]
    /// Flows in order of their first packet.
    package private(set) var order: [Flow] = []
    /// Packets that were not TCP over IP (ARP, UDP, …), skipped.
    package private(set) var skipped = 0

    /// Reassembles every TCP flow of `file`; packets that are not TCP over IPv4 or IPv6 are counted in `skipped`.
    /// - Throws: `CaptureError` when a packet's link type is not one of those listed on `TCPStreams`, or a
    ///   stream has a gap (packets missing from the capture, §17.5).
    package init(file: PacketFile) throws {
        var segments = [Flow: [Segment]]()
        for p in file.packets {
            guard let s = try Self.segment(p) else {
                skipped += 1
                continue
            }
            if segments[s.flow] == nil { order.append(s.flow) }
            segments[s.flow, default: []].append(s)
        }
        for flow in order { streams[flow] = try Self.reassemble(segments[flow]!) }
    }

    /// Orders one direction's segments by sequence number (wrapping), drops retransmitted
    /// bytes, and refuses a gap: a capture that lost packets cannot be decrypted past it.
    static func reassemble(_ segments: [Segment]) throws -> Stream {
        let syn = segments.first { $0.syn }
        let isn = syn.map { $0.seq &+ 1 } ?? segments.min { Int32(bitPattern: $0.seq &- $1.seq) < 0 }!.seq
        var stream = Stream(flow: segments[0].flow, sawSYN: syn != nil, firstTime: segments[0].time)
        let ordered = segments.filter { !$0.payload.isEmpty }.map {
            (rel: Int(Int32(bitPattern: $0.seq &- isn)), s: $0)
        }
        .sorted { $0.rel != $1.rel ? $0.rel < $1.rel : $0.s.time < $1.s.time }
        for (rel, s) in ordered {
            guard rel >= 0 else { continue }  // before the stream start (data before our first packet)
            let have = stream.bytes.count
            guard rel <= have else {
                throw CaptureError(
                    offset: s.offset,
                    "TCP stream \(s.flow.source) → \(s.flow.destination) has a gap of \(rel - have) bytes at stream offset \(have) (packets missing from the capture)"
                )
            }
            let end = rel + s.payload.count
            guard end > have else { continue }  // a retransmission of what we have
            stream.bytes += s.payload[(have - rel)...]
            stream.arrivals.append((end, s.time))
        }
        return stream
    }

    static func segment(_ p: Packet) throws -> Segment? {
        let d = p.data
        var ip: Int
        var version: UInt8? = nil
        switch p.linkType {
        case 1:  // Ethernet, with up to two VLAN tags
            guard d.count >= 14 else { return nil }
            ip = 14
            var ethertype = UInt16(d[12]) << 8 | UInt16(d[13])
            while ethertype == 0x8100 || ethertype == 0x88A8, d.count >= ip + 4 {
                ethertype = UInt16(d[ip + 2]) << 8 | UInt16(d[ip + 3])
                ip += 4
            }
            guard ethertype == 0x0800 || ethertype == 0x86DD else { return nil }
        case 113:  // Linux cooked: protocol at 14
            guard d.count >= 16 else { return nil }
            let proto = UInt16(d[14]) << 8 | UInt16(d[15])
            guard proto == 0x0800 || proto == 0x86DD else { return nil }
            ip = 16
        case 276:  // Linux cooked v2: protocol at 0
            guard d.count >= 20 else { return nil }
            let proto = UInt16(d[0]) << 8 | UInt16(d[1])
            guard proto == 0x0800 || proto == 0x86DD else { return nil }
            ip = 20
        case 0:  // BSD loopback: 4-byte address family in host order
            guard d.count >= 4 else { return nil }
            ip = 4
        case 101: ip = 0
        case 228:
            ip = 0
            version = 4
        case 229:
            ip = 0
            version = 6
        default:
            throw CaptureError(
                .notDecryptable, offset: p.offset,
                "link type \(p.linkType) is not supported for decryption (supported: 0, 1, 101, 113, 228, 229, 276)")
        }
        guard d.count > ip else { return nil }
        let v = version ?? d[ip] >> 4
        let src: String
        let dst: String
        let tcp: Int
        let end: Int
        if v == 4 {
            guard d.count >= ip + 20, d[ip + 9] == 6 else { return nil }
            let ihl = Int(d[ip] & 0x0f) * 4
            let total = Int(d[ip + 2]) << 8 | Int(d[ip + 3])
            guard ihl >= 20, total >= ihl, d.count >= ip + ihl else { return nil }
            src = d[(ip + 12)..<(ip + 16)].map(String.init).joined(separator: ".")
            dst = d[(ip + 16)..<(ip + 20)].map(String.init).joined(separator: ".")
            tcp = ip + ihl
            end = min(d.count, ip + total)
        } else if v == 6 {
            guard d.count >= ip + 40, d[ip + 6] == 6 else { return nil }  // no extension headers
            let payload = Int(d[ip + 4]) << 8 | Int(d[ip + 5])
            src = ipv6(Array(d[(ip + 8)..<(ip + 24)]))
            dst = ipv6(Array(d[(ip + 24)..<(ip + 40)]))
            tcp = ip + 40
            end = min(d.count, tcp + payload)
        } else {
            return nil
        }
        guard end >= tcp + 20 else { return nil }
        let dataOffset = Int(d[tcp + 12] >> 4) * 4
        guard dataOffset >= 20, tcp + dataOffset <= end else { return nil }
        let sport = UInt16(d[tcp]) << 8 | UInt16(d[tcp + 1])
        let dport = UInt16(d[tcp + 2]) << 8 | UInt16(d[tcp + 3])
        let seq = UInt32(d[tcp + 4]) << 24 | UInt32(d[tcp + 5]) << 16 | UInt32(d[tcp + 6]) << 8 | UInt32(d[tcp + 7])
        let syn = d[tcp + 13] & 0x02 != 0
        return Segment(
            flow: Flow(source: Endpoint(address: src, port: sport), destination: Endpoint(address: dst, port: dport)),
            seq: seq, syn: syn, payload: Array(d[(tcp + dataOffset)..<end]), time: p.time, offset: p.offset)
    }

    static func ipv6(_ b: [UInt8]) -> String {
        stride(from: 0, to: 16, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }.joined(
            separator: ":")
    }
}
