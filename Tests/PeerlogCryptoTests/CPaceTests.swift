import Foundation
import PeerlogTestSupport
import Testing

@testable import PeerlogCrypto

/// CPace against draft-irtf-cfrg-cpace-21's ristretto255/SHA-512 vectors (Tests/Vectors/cpace_ristretto255.json
/// says where they come from), then the properties the pairing relies on.
struct CPaceTests {
    struct Suite: Decodable {
        let PRS, CI, sid, g, ya, ADa, Ya, yb, ADb, Yb, K, ISK_IR: String
    }
    struct Valid: Decodable {
        let s, X: String
        let vfy: String
        enum CodingKeys: String, CodingKey {
            case s, X
            case vfy = "G.scalar_mult_vfy(s,X)"
        }
    }
    struct Points: Decodable {
        let valid: Valid
        let invalid1, invalid2: String
        enum CodingKeys: String, CodingKey {
            case valid = "Valid"
            case invalid1 = "Invalid Y1"
            case invalid2 = "Invalid Y2"
        }
    }
    struct File: Decodable {
        let source: String
        let generator_string, generator_hash: String
        let cpace: Suite
        let points: Points
    }

    static let file: File = {
        let data = FileManager.default.contents(atPath: TestSupport.vectorPath("cpace_ristretto255.json"))!
        return try! JSONDecoder().decode(File.self, from: data)
    }()

    static func b(_ hex: String) -> [UInt8] { TestSupport.bytes(hex: hex) }

    @Test func generatorMatchesTheDraft() {
        let v = Self.file.cpace
        let string = CPace.generatorString(password: Self.b(v.PRS), channelIdentifier: Self.b(v.CI), sid: Self.b(v.sid))
        #expect(string == Self.b(Self.file.generator_string))
        #expect(SHA512.hash(string) == Self.b(Self.file.generator_hash))
        #expect(
            CPace.generator(password: Self.b(v.PRS), channelIdentifier: Self.b(v.CI), sid: Self.b(v.sid)) == Self.b(v.g)
        )
    }

    @Test func sharesPointAndKeyMatchTheDraft() throws {
        let v = Self.file.cpace
        let a = try CPace(
            role: .initiator, password: Self.b(v.PRS), sid: Self.b(v.sid), channelIdentifier: Self.b(v.CI),
            associatedData: Self.b(v.ADa), scalar: Self.b(v.ya))
        let b = try CPace(
            role: .responder, password: Self.b(v.PRS), sid: Self.b(v.sid), channelIdentifier: Self.b(v.CI),
            associatedData: Self.b(v.ADb), scalar: Self.b(v.yb))
        #expect(a.share == Self.b(v.Ya))
        #expect(b.share == Self.b(v.Yb))
        #expect(try a.sharedPoint(peerShare: b.share) == Self.b(v.K))
        #expect(try b.sharedPoint(peerShare: a.share) == Self.b(v.K))
        let iskA = try a.sharedKey(peerShare: b.share, peerAssociatedData: Self.b(v.ADb))
        let iskB = try b.sharedKey(peerShare: a.share, peerAssociatedData: Self.b(v.ADa))
        #expect(iskA.copyBytes() == Self.b(v.ISK_IR))
        #expect(iskB.copyBytes() == Self.b(v.ISK_IR))
    }

    @Test func scalarMultVerifyVectors() throws {
        let p = Self.file.points
        let valid = try CPace(
            role: .initiator, password: [1], sid: [], channelIdentifier: [], associatedData: [],
            scalar: Self.b(p.valid.s))
        #expect(try valid.sharedPoint(peerShare: Self.b(p.valid.X)) == Self.b(p.valid.vfy))
        for invalid in [p.invalid1, p.invalid2] {
            #expect(throws: CryptoError(.weakSharedSecret)) { try valid.sharedPoint(peerShare: Self.b(invalid)) }
            #expect(throws: CryptoError(.weakSharedSecret)) {
                try valid.sharedKey(peerShare: Self.b(invalid), peerAssociatedData: [])
            }
        }
    }

    @Test func lebLengthPrefix() {
        #expect(CPace.prependLen([]) == [0])
        #expect(CPace.prependLen([UInt8](repeating: 7, count: 127)).prefix(1) == [127])
        #expect(CPace.prependLen([UInt8](repeating: 7, count: 128)).prefix(2) == [0x80, 0x01])
        #expect(CPace.prependLen([UInt8](repeating: 7, count: 300)).prefix(2) == [0xac, 0x02])
    }

    static func pair(
        _ pa: String, _ pb: String, sid: [UInt8] = SecureRandom.bytes(16)
    ) throws -> (SecureBytes, SecureBytes) {
        let a = try CPace(
            role: .initiator, password: Array(pa.utf8), sid: sid, channelIdentifier: Array("ci".utf8),
            associatedData: [])
        let b = try CPace(
            role: .responder, password: Array(pb.utf8), sid: sid, channelIdentifier: Array("ci".utf8),
            associatedData: [])
        return (
            try a.sharedKey(peerShare: b.share, peerAssociatedData: []),
            try b.sharedKey(peerShare: a.share, peerAssociatedData: [])
        )
    }

    @Test func samePasswordAgreesWrongPasswordDoesNot() throws {
        let (a, b) = try Self.pair("1-2345-6789", "1-2345-6789")
        #expect(a == b)
        #expect(a.count == CPace.keyLength)
        let (c, d) = try Self.pair("1-2345-6789", "1-2345-6788")
        #expect(c != d)
        // Fresh scalars: two runs with the same password give different keys.
        let (e, _) = try Self.pair("1-2345-6789", "1-2345-6789")
        #expect(e != a)
    }

    @Test func malformedShareAndScalarAreRefused() throws {
        let a = try CPace(role: .initiator, password: [1], sid: [], channelIdentifier: [], associatedData: [])
        #expect(a.share.count == CPace.shareLength)
        #expect(throws: CryptoError(.weakSharedSecret)) { try a.sharedKey(peerShare: [0], peerAssociatedData: []) }
        #expect(throws: CryptoError(.weakSharedSecret)) {
            try a.sharedKey(peerShare: [UInt8](repeating: 0xff, count: 32), peerAssociatedData: [])
        }
        #expect(throws: CryptoError(.invalidParameter)) {
            try CPace(role: .initiator, password: [1], sid: [], channelIdentifier: [], associatedData: [], scalar: [1])
        }
        #expect(throws: CryptoError(.invalidParameter)) {
            try CPace(
                role: .initiator, password: [1], sid: [], channelIdentifier: [], associatedData: [],
                scalar: [UInt8](repeating: 0, count: 32))
        }
    }
}
