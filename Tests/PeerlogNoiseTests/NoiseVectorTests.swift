import Foundation
import PeerlogCrypto
import PeerlogNoise
import PeerlogTestSupport
import Testing

/// One vector of Tests/Vectors/noise (a verbatim copy of the shared vectors; format in its README.md).
struct NoiseVector: Decodable {
    struct Message: Decodable {
        let payload: String
        let ciphertext: String
    }
    let protocolName: String?
    let name: String?
    let initPrologue: String
    let respPrologue: String
    let initStatic: String?
    let respStatic: String?
    let initEphemeral: String
    let respEphemeral: String
    let initRemoteStatic: String?
    let handshakeHash: String
    let messages: [Message]

    var fullName: String { protocolName ?? name ?? "?" }

    static func load(_ file: String) throws -> [NoiseVector] {
        struct File: Decodable { let vectors: [NoiseVector] }
        let data = try Data(contentsOf: URL(fileURLWithPath: TestSupport.vectorPath("noise/" + file)))
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(File.self, from: data).vectors
    }
}

func hexBytes(_ hex: String) -> [UInt8] { TestSupport.bytes(hex: hex) }

func x25519(_ hex: String?) throws -> X25519.PrivateKey? {
    guard let hex else { return nil }
    return try X25519.PrivateKey(SecureBytes(hexBytes(hex)))
}

@Suite struct NoiseVectorTests {
    @Test(arguments: ["cacophony_25519_ChaChaPoly.json", "noise-c-basic_25519_ChaChaPoly.json"])
    func vectors(file: String) throws {
        let vectors = try NoiseVector.load(file)
        #expect(vectors.count == 8)
        for v in vectors { try check(v) }
    }

    private func check(_ v: NoiseVector) throws {
        let proto = try NoiseProtocol(name: v.fullName)
        let remote = try v.initRemoteStatic.map { try X25519.PublicKey(hexBytes($0)) }
        var initiator = try NoiseHandshake(
            protocol: proto, initiator: true, prologue: hexBytes(v.initPrologue), localStatic: x25519(v.initStatic),
            remoteStatic: remote, ephemeral: x25519(v.initEphemeral))
        var responder = try NoiseHandshake(
            protocol: proto, initiator: false, prologue: hexBytes(v.respPrologue), localStatic: x25519(v.respStatic),
            ephemeral: x25519(v.respEphemeral))
        var i = 0
        while !initiator.isComplete {
            let m = v.messages[i]
            let ciphertext: [UInt8]
            let payload: [UInt8]
            if i % 2 == 0 {
                ciphertext = try initiator.writeMessage(payload: hexBytes(m.payload))
                payload = try responder.readMessage(ciphertext)
            } else {
                ciphertext = try responder.writeMessage(payload: hexBytes(m.payload))
                payload = try initiator.readMessage(ciphertext)
            }
            #expect(hexString(ciphertext) == m.ciphertext, "\(v.fullName) handshake message \(i)")
            #expect(hexString(payload) == m.payload, "\(v.fullName) handshake message \(i)")
            i += 1
        }
        #expect(responder.isComplete)
        #expect(hexString(initiator.handshakeHash) == v.handshakeHash, "\(v.fullName)")
        #expect(hexString(responder.handshakeHash) == v.handshakeHash, "\(v.fullName)")
        if proto.pattern == .xx || proto.pattern == .ik || proto.pattern == .xk {
            #expect(responder.remoteStaticKey == (try x25519(v.initStatic))?.publicKey)
        }
        var (initSend, initReceive) = try initiator.split()
        var (respSend, respReceive) = try responder.split()
        for j in i..<v.messages.count {
            let m = v.messages[j]
            let ciphertext: [UInt8]
            let payload: [UInt8]
            if j % 2 == 0 {
                ciphertext = try initSend.encrypt(hexBytes(m.payload))
                payload = try respReceive.decrypt(ciphertext)
            } else {
                ciphertext = try respSend.encrypt(hexBytes(m.payload))
                payload = try initReceive.decrypt(ciphertext)
            }
            #expect(hexString(ciphertext) == m.ciphertext, "\(v.fullName) transport message \(j)")
            #expect(hexString(payload) == m.payload, "\(v.fullName) transport message \(j)")
        }
    }
}
