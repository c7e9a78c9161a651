/// pcapng block encoding (draft-ietf-opsawg-pcapng), little-endian as written by this host.
/// Only what a Peerlog capture needs: section header, interface description and enhanced
/// packet blocks, with a few standard options.
package enum Pcapng {
    package static let sectionHeaderType: UInt32 = 0x0A0D_0D0A
    package static let interfaceType: UInt32 = 0x0000_0001
    package static let enhancedPacketType: UInt32 = 0x0000_0006
    static let simplePacketType: UInt32 = 0x0000_0003
    static let obsoletePacketType: UInt32 = 0x0000_0002
    package static let byteOrderMagic: UInt32 = 0x1A2B_3C4D

    /// epb_flags direction bits: 01 inbound, 10 outbound.
    package static let inboundFlag: UInt32 = 1
    /// epb_flags direction bits `10`: outbound.
    package static let outboundFlag: UInt32 = 2

    /// A section header block: version 1.0, section length unknown (−1), `application` as `shb_userappl` (§17.1).
    package static func sectionHeader(application: String) -> [UInt8] {
        var body = [UInt8]()
        body.le32(byteOrderMagic)
        body.le16(1)  // major
        body.le16(0)  // minor
        body.le64(UInt64.max)  // section length unknown
        body += option(4, Array(application.utf8))  // shb_userappl
        body += endOfOptions
        return block(sectionHeaderType, body)
    }

    /// Interface with microsecond timestamps (the default resolution), no snap length limit.
    package static func interface(linkType: UInt16, name: String, description: String) -> [UInt8] {
        var body = [UInt8]()
        body.le16(linkType)
        body.le16(0)
        body.le32(0)  // snaplen: none
        body += option(2, Array(name.utf8))  // if_name
        body += option(3, Array(description.utf8))  // if_description
        body += endOfOptions
        return block(interfaceType, body)
    }

    /// An enhanced packet block (§17.1): `interface` indexes the section's interface blocks, `microseconds` since
    /// the Unix epoch (the default resolution), captured length = original length = `data.count` (which must
    /// fit 32 bits), `flags` written as `epb_flags` and `comment` as `opt_comment` when given.
    package static func enhancedPacket(
        interface: UInt32, microseconds: UInt64, data: [UInt8], flags: UInt32?, comment: String? = nil
    ) -> [UInt8] {
        var body = [UInt8]()
        body.reserveCapacity(data.count + 40)
        body.le32(interface)
        body.le32(UInt32(truncatingIfNeeded: microseconds >> 32))
        body.le32(UInt32(truncatingIfNeeded: microseconds))
        body.le32(UInt32(data.count))
        body.le32(UInt32(data.count))
        body += data
        body += [UInt8](repeating: 0, count: padding(data.count))
        if let comment { body += option(1, Array(comment.utf8)) }  // opt_comment
        if let flags {
            var value = [UInt8]()
            value.le32(flags)
            body += option(2, value)  // epb_flags
        }
        if comment != nil || flags != nil { body += endOfOptions }
        return block(enhancedPacketType, body)
    }

    package static func padding(_ n: Int) -> Int { (4 - n % 4) % 4 }

    static func option(_ code: UInt16, _ value: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.le16(code)
        out.le16(UInt16(value.count))
        out += value
        out += [UInt8](repeating: 0, count: padding(value.count))
        return out
    }

    static let endOfOptions: [UInt8] = [0, 0, 0, 0]

    static func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
        let total = UInt32(12 + body.count)
        var out = [UInt8]()
        out.reserveCapacity(Int(total))
        out.le32(type)
        out.le32(total)
        out += body
        out.le32(total)
        return out
    }
}

extension Array where Element == UInt8 {
    mutating func le16(_ v: UInt16) {
        append(UInt8(v & 0xff))
        append(UInt8(v >> 8))
    }
    mutating func le32(_ v: UInt32) {
        for s in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: v >> UInt32(s))) }
    }
    mutating func le64(_ v: UInt64) {
        for s in stride(from: 0, to: 64, by: 8) { append(UInt8(truncatingIfNeeded: v >> UInt64(s))) }
    }
}
