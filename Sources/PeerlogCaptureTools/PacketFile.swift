import PeerlogCapture
import PeerlogCrypto

/// One packet read from a pcapng or classic pcap file.
package struct Packet: Sendable {
    /// Index of the interface (pcapng) or 0 (pcap).
    package let interface: Int
    /// The LINKTYPE_ value of the packet's interface (147: a Peerlog record, §17.1).
    package let linkType: UInt16
    /// Microseconds since the Unix epoch.
    package let time: UInt64
    /// The captured bytes (the captured length, which can be less than the packet's original length).
    package let data: [UInt8]
    /// epb_flags when present (direction bits 0–1).
    package let flags: UInt32?
    /// Byte offset of the packet data in the file (for error messages).
    package let offset: Int
}

/// Reads every packet of a pcapng file (any number of sections, either byte order) or a classic
/// pcap file (microsecond or nanosecond). Every length is checked against what is left, so a
/// truncated or corrupt file is one `CaptureError` naming the offset, never a crash.
package struct PacketFile {
    /// The largest pcapng block or pcap record read: 64 MiB (§17.1); a larger one is a `CaptureError`.
    package static let maxBlockBytes = 64 << 20

    /// Every enhanced packet block (pcapng) or record (pcap), in file order; simple and obsolete packet
    /// blocks are skipped.
    package private(set) var packets: [Packet] = []
    /// The link type of each pcapng interface, in order of appearance.
    package private(set) var interfaces: [UInt16] = []
    /// Interface names (if_name), where given.
    package private(set) var interfaceNames: [String?] = []
    /// `"pcapng"` or `"pcap"`.
    package let format: String

    /// Reads a whole pcapng or classic pcap file.
    /// - Throws: `CaptureError` naming the byte offset when the file is neither, or a block, record or option is
    ///   truncated, inconsistent, of an unsupported version or larger than `maxBlockBytes`.
    package init(bytes: [UInt8]) throws {
        guard bytes.count >= 4 else {
            throw CaptureError(offset: 0, "file is \(bytes.count) bytes: too short to be pcap or pcapng")
        }
        let r = ByteReader(bytes)
        let magic = try r.u32(at: 0, bigEndian: false)
        switch magic {
        case Pcapng.sectionHeaderType:
            format = "pcapng"
            try readPcapng(r)
        case 0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1:
            format = "pcap"
            try readPcap(r, magic: magic)
        default:
            throw CaptureError(
                offset: 0, "not a pcapng or pcap file (first bytes \(hexString(Array(bytes.prefix(4)))))")
        }
    }

    private mutating func readPcapng(_ r: ByteReader) throws {
        var bigEndian = false
        var offset = 0
        var sectionInterfaces = 0
        var resolution = [UInt64]()  // units per second, per interface of the section
        while offset < r.count {
            guard r.count - offset >= 12 else {
                throw CaptureError(
                    offset: offset, "truncated block header (\(r.count - offset) bytes left, a block needs at least 12)"
                )
            }
            var type = try r.u32(at: offset, bigEndian: bigEndian)
            if type == Pcapng.sectionHeaderType {
                guard r.count - offset >= 28 else {
                    throw CaptureError(offset: offset, "truncated section header block")
                }
                let bom = try r.u32(at: offset + 8, bigEndian: false)
                switch bom {
                case Pcapng.byteOrderMagic: bigEndian = false
                case 0x4D3C_2B1A: bigEndian = true
                default: throw CaptureError(offset: offset + 8, "bad byte-order magic 0x\(String(bom, radix: 16))")
                }
                let major = try r.u16(at: offset + 12, bigEndian: bigEndian)
                guard major == 1 else {
                    throw CaptureError(offset: offset + 12, "pcapng major version \(major) is not supported")
                }
                type = Pcapng.sectionHeaderType
                sectionInterfaces = interfaces.count
                resolution = []
            }
            let length = Int(try r.u32(at: offset + 4, bigEndian: bigEndian))
            guard length >= 12, length % 4 == 0 else {
                throw CaptureError(offset: offset + 4, "block length \(length) is not a multiple of 4 of at least 12")
            }
            guard length <= Self.maxBlockBytes else {
                throw CaptureError(
                    offset: offset + 4, "block length \(length) exceeds the \(Self.maxBlockBytes)-byte limit")
            }
            guard length <= r.count - offset else {
                throw CaptureError(offset: offset, "truncated block: length \(length), \(r.count - offset) bytes left")
            }
            let trailer = Int(try r.u32(at: offset + length - 4, bigEndian: bigEndian))
            guard trailer == length else {
                throw CaptureError(
                    offset: offset + length - 4,
                    "block trailer length \(trailer) differs from its header length \(length)")
            }
            let body = offset + 8
            let bodyEnd = offset + length - 4
            switch type {
            case Pcapng.interfaceType:
                guard bodyEnd - body >= 8 else {
                    throw CaptureError(offset: body, "interface description block too short")
                }
                interfaces.append(try r.u16(at: body, bigEndian: bigEndian))
                let options = try Self.options(r, from: body + 8, to: bodyEnd, bigEndian: bigEndian)
                interfaceNames.append(options[2].map { String(decoding: $0, as: UTF8.self) })
                resolution.append(try Self.resolution(options[9], at: body))
            case Pcapng.enhancedPacketType:
                guard bodyEnd - body >= 20 else { throw CaptureError(offset: body, "enhanced packet block too short") }
                let interface = Int(try r.u32(at: body, bigEndian: bigEndian))
                let index = sectionInterfaces + interface
                guard interface < resolution.count, index < interfaces.count else {
                    throw CaptureError(
                        offset: body, "packet names interface \(interface), but the section has \(resolution.count)")
                }
                let ts =
                    UInt64(try r.u32(at: body + 4, bigEndian: bigEndian)) << 32
                    | UInt64(try r.u32(at: body + 8, bigEndian: bigEndian))
                let captured = Int(try r.u32(at: body + 12, bigEndian: bigEndian))
                let dataStart = body + 20
                guard captured <= bodyEnd - dataStart else {
                    throw CaptureError(offset: body + 12, "captured length \(captured) exceeds its block")
                }
                let options = try Self.options(
                    r, from: dataStart + captured + Pcapng.padding(captured), to: bodyEnd, bigEndian: bigEndian)
                let flags = try options[2].map { v -> UInt32 in
                    guard v.count == 4 else {
                        throw CaptureError(offset: dataStart, "epb_flags is \(v.count) bytes, not 4")
                    }
                    let x = ByteReader(v)
                    return try x.u32(at: 0, bigEndian: bigEndian)
                }
                packets.append(
                    Packet(
                        interface: index, linkType: interfaces[index],
                        time: try Self.microseconds(ts, perSecond: resolution[interface], at: body + 4),
                        data: r.slice(dataStart, captured), flags: flags, offset: dataStart))
            default:
                break  // section headers handled above; other blocks carry nothing we read
            }
            offset += length
        }
    }

    private mutating func readPcap(_ r: ByteReader, magic: UInt32) throws {
        let bigEndian = magic == 0xD4C3_B2A1 || magic == 0x4D3C_B2A1
        let nanos = magic == 0xA1B2_3C4D || magic == 0x4D3C_B2A1
        guard r.count >= 24 else { throw CaptureError(offset: 0, "truncated pcap file header") }
        let linkType = UInt16(truncatingIfNeeded: try r.u32(at: 20, bigEndian: bigEndian))
        interfaces = [linkType]
        interfaceNames = [nil]
        var offset = 24
        while offset < r.count {
            guard r.count - offset >= 16 else { throw CaptureError(offset: offset, "truncated pcap record header") }
            let seconds = UInt64(try r.u32(at: offset, bigEndian: bigEndian))
            let fraction = UInt64(try r.u32(at: offset + 4, bigEndian: bigEndian))
            let captured = Int(try r.u32(at: offset + 8, bigEndian: bigEndian))
            guard captured <= Self.maxBlockBytes else {
                throw CaptureError(
                    offset: offset + 8, "record length \(captured) exceeds the \(Self.maxBlockBytes)-byte limit")
            }
            guard captured <= r.count - offset - 16 else {
                throw CaptureError(
                    offset: offset, "truncated pcap record: \(captured) bytes announced, \(r.count - offset - 16) left")
            }
            let micros = seconds * 1_000_000 + (nanos ? fraction / 1000 : fraction)
            packets.append(
                Packet(
                    interface: 0, linkType: linkType, time: micros, data: r.slice(offset + 16, captured), flags: nil,
                    offset: offset + 16))
            offset += 16 + captured
        }
    }

    private static func options(
        _ r: ByteReader, from start: Int, to end: Int, bigEndian: Bool
    ) throws -> [UInt16: [UInt8]] {
        var out = [UInt16: [UInt8]]()
        var at = start
        while at + 4 <= end {
            let code = try r.u16(at: at, bigEndian: bigEndian)
            let length = Int(try r.u16(at: at + 2, bigEndian: bigEndian))
            if code == 0 { break }
            guard at + 4 + length <= end else {
                throw CaptureError(offset: at, "option \(code) of \(length) bytes runs past its block")
            }
            out[code] = r.slice(at + 4, length)
            at += 4 + length + Pcapng.padding(length)
        }
        return out
    }

    private static func resolution(_ option: [UInt8]?, at offset: Int) throws -> UInt64 {
        guard let option, let v = option.first else { return 1_000_000 }
        let exponent = Int(v & 0x7f)
        guard exponent <= 18 else {
            throw CaptureError(offset: offset, "if_tsresol 0x\(String(v, radix: 16)) is out of range")
        }
        var n: UInt64 = 1
        for _ in 0..<exponent { n *= v & 0x80 == 0 ? 10 : 2 }
        return n
    }

    /// The timestamp in microseconds; an error when that does not fit 64 bits (a coarse
    /// `if_tsresol` with a huge count: found by fuzzing).
    static func microseconds(_ ts: UInt64, perSecond: UInt64, at offset: Int) throws -> UInt64 {
        if perSecond == 1_000_000 { return ts }
        let tooLarge = CaptureError(
            offset: offset, "timestamp \(ts) at \(perSecond) per second is beyond 2^64 microseconds")
        // Decimal resolutions (the usual ones) exactly; binary ones through Double.
        if perSecond < 1_000_000, 1_000_000 % perSecond == 0 {
            let (micros, overflow) = ts.multipliedReportingOverflow(by: 1_000_000 / perSecond)
            if overflow { throw tooLarge }
            return micros
        }
        if perSecond > 1_000_000, perSecond % 1_000_000 == 0 {
            let per = perSecond / 1_000_000
            return ts / per + (ts % per >= per - per / 2 ? 1 : 0)
        }
        let micros = (Double(ts) / Double(perSecond) * 1_000_000).rounded()
        guard micros < 18_446_744_073_709_551_616.0 else { throw tooLarge }
        return UInt64(micros)
    }
}

/// Bounds-checked little/big-endian reads.
struct ByteReader {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var count: Int { bytes.count }

    func u16(at i: Int, bigEndian: Bool) throws -> UInt16 {
        guard i >= 0, i + 2 <= bytes.count else { throw CaptureError(offset: i, "unexpected end of file") }
        return bigEndian ? UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i + 1]) << 8 | UInt16(bytes[i])
    }

    func u32(at i: Int, bigEndian: Bool) throws -> UInt32 {
        guard i >= 0, i + 4 <= bytes.count else { throw CaptureError(offset: i, "unexpected end of file") }
        var v: UInt32 = 0
        for k in 0..<4 { v |= UInt32(bytes[i + k]) << (bigEndian ? UInt32(24 - 8 * k) : UInt32(8 * k)) }
        return v
    }

    func slice(_ start: Int, _ count: Int) -> [UInt8] { Array(bytes[start..<start + count]) }
}
