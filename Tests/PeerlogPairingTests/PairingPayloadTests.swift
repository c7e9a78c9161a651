import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogPairing
import Testing

/// The typed payloads, alone and carried through full exchanges.
struct PairingPayloadTests {
    static let host = try! LocalDevice.generate(name: "host laptop", createdAt: 1)
    static let otherPerson = try! LocalDevice.generate(name: "bob's laptop", createdAt: 2)
    static let th = SecureRandom.bytes(32)

    @Test func fullLinkExchange() throws {
        var offer = PairingOffer(code: .generate(nameplate: 3), purpose: .link, expiresAt: 10)
        var host = try offer.beginExchange(now: 0).get()
        // The new laptop types the code.
        var guest = PairingGuestExchange(code: try PairingCode(parsing: offer.code.description), purpose: .link)
        let newSigning = Ed25519.PrivateKey()
        let newNoise = X25519.PrivateKey()
        let start = try #require(guest.receive(host.opening).sent)
        let reply = try #require(host.receive(start).sent)
        #expect(guest.receive(reply).isReady)
        let guestTH = try #require(guest.transcriptHash)
        let request = try LinkRequest.make(
            signingKey: newSigning, noiseKey: newNoise.publicKey, name: "new laptop", transcriptHash: guestTH)
        let confirm = try guest.send(guestPayload: request.encoded)

        let received = try #require(host.receive(confirm).payload)
        let hostTH = try #require(host.transcriptHash)
        let parsed = try LinkRequest(decoding: received, transcriptHash: hostTH)
        #expect(parsed.device == DeviceID(publicKey: newSigning.publicKey))
        #expect(parsed.noiseKey == newNoise.publicKey && parsed.name == "new laptop")
        let grant = try LinkGrant.make(
            identityKey: Self.host.identityKey!, request: parsed, shareIdentity: true, peers: ["127.0.0.1:7411"],
            hostDevice: Self.host.device, createdAt: 5, transcriptHash: hostTH)
        let done = try host.finish(hostPayload: grant.encoded)
        offer.markUsed()

        let hostPayload = try #require(guest.receive(done).hostPayload)
        let got = try LinkGrant(decoding: hostPayload, transcriptHash: guestTH, expecting: request)
        #expect(got.certificate.identity == Self.host.identity)
        #expect(got.certificate.device == request.device && got.certificate.noiseKey == newNoise.publicKey)
        #expect(got.certificate.verify() == .valid)
        #expect(got.identitySeed == Self.host.identityKey!.seed)
        #expect(got.peers == ["127.0.0.1:7411"] && got.hostDevice == Self.host.device)
        #expect(guest.confirmation == host.confirmation)
    }

    @Test func linkGrantWithoutIdentityAndItsChecks() throws {
        let signing = Ed25519.PrivateKey()
        let noise = X25519.PrivateKey().publicKey
        let request = try LinkRequest.make(signingKey: signing, noiseKey: noise, name: "n", transcriptHash: Self.th)
        let grant = try LinkGrant.make(
            identityKey: Self.host.identityKey!, request: request, shareIdentity: false, peers: [],
            hostDevice: Self.host.device, createdAt: 5, transcriptHash: Self.th)
        let got = try LinkGrant(decoding: grant.encoded, transcriptHash: Self.th, expecting: request)
        #expect(got.identitySeed == nil)
        // Another exchange's transcript.
        #expect(throws: PairingError(.badPayload)) {
            try LinkGrant(decoding: grant.encoded, transcriptHash: SecureRandom.bytes(32), expecting: request)
        }
        // A certificate for other keys than requested.
        let other = try LinkRequest.make(
            signingKey: Ed25519.PrivateKey(), noiseKey: noise, name: "n", transcriptHash: Self.th)
        #expect(throws: PairingError(.badPayload)) {
            try LinkGrant(decoding: grant.encoded, transcriptHash: Self.th, expecting: other)
        }
        let otherNoise = try LinkRequest.make(
            signingKey: signing, noiseKey: X25519.PrivateKey().publicKey, name: "n", transcriptHash: Self.th)
        #expect(throws: PairingError(.badPayload)) {
            try LinkGrant(decoding: grant.encoded, transcriptHash: Self.th, expecting: otherNoise)
        }
        // A seed that is not the certificate's identity.
        var m = try CBORDecoder.decodeStrict(grant.encoded).mapValue!
        m[.text("identity_seed")] = .bytes(SecureRandom.bytes(32))
        #expect(throws: PairingError(.badPayload)) {
            try LinkGrant(decoding: CBOREncoder.encode(.map(m)), transcriptHash: Self.th, expecting: request)
        }
        // A certificate signed by another identity than it names.
        let forged = try DeviceCertificate(
            payload: grant.certificate.payload, signature: Self.otherPerson.identityKey!.signature(for: [1]))
        m = try CBORDecoder.decodeStrict(grant.encoded).mapValue!
        m[.text("certificate")] = .bytes(forged.encoded)
        #expect(throws: PairingError(.badPayload)) {
            try LinkGrant(decoding: CBOREncoder.encode(.map(m)), transcriptHash: Self.th, expecting: request)
        }
        // Peer limits.
        #expect(throws: PairingError(.badPayload)) {
            try LinkGrant.make(
                identityKey: Self.host.identityKey!, request: request, shareIdentity: false,
                peers: Array(repeating: "h:1", count: PairingPayloadLimits.maxPeers + 1), hostDevice: Self.host.device,
                createdAt: 5, transcriptHash: Self.th)
        }
        _ = try LinkGrant.make(
            identityKey: Self.host.identityKey!, request: request, shareIdentity: false,
            peers: Array(repeating: String(repeating: "h", count: PairingPayloadLimits.maxPeerBytes), count: 16),
            hostDevice: Self.host.device, createdAt: 5, transcriptHash: Self.th)
    }

    @Test func linkRequestSignatureIsBoundToTheTranscript() throws {
        let request = try LinkRequest.make(
            signingKey: Ed25519.PrivateKey(), noiseKey: X25519.PrivateKey().publicKey, name: "laptop",
            transcriptHash: Self.th)
        _ = try LinkRequest(decoding: request.encoded, transcriptHash: Self.th)
        #expect(throws: PairingError(.badPayload)) {
            try LinkRequest(decoding: request.encoded, transcriptHash: SecureRandom.bytes(32))
        }
        // A changed name breaks the signature.
        var m = try CBORDecoder.decodeStrict(request.encoded).mapValue!
        m[.text("name")] = "other"
        #expect(throws: PairingError(.badPayload)) {
            try LinkRequest(decoding: CBOREncoder.encode(.map(m)), transcriptHash: Self.th)
        }
        // Name boundaries.
        let name64 = String(repeating: "n", count: DeviceCertificate.maxNameBytes)
        _ = try LinkRequest.make(
            signingKey: Ed25519.PrivateKey(), noiseKey: X25519.PrivateKey().publicKey, name: name64,
            transcriptHash: Self.th)
        for bad in ["", name64 + "n"] {
            #expect(throws: PairingError(.badPayload)) {
                try LinkRequest.make(
                    signingKey: Ed25519.PrivateKey(), noiseKey: X25519.PrivateKey().publicKey, name: bad,
                    transcriptHash: Self.th)
            }
        }
        #expect(throws: PairingError(.badPayload)) {
            try LinkRequest.make(
                signingKey: Ed25519.PrivateKey(), noiseKey: X25519.PrivateKey().publicKey, name: "x",
                transcriptHash: [1])
        }
        // Another payload type, garbage, extra keys.
        let invite = try InviteRequest.make(
            certificate: Self.otherPerson.certificate, signingKey: Self.otherPerson.signingKey, transcriptHash: Self.th)
        m = try CBORDecoder.decodeStrict(request.encoded).mapValue!
        m[.text("extra")] = 1
        for bytes in [invite.encoded, [0xff], CBOREncoder.encode(.map(m))] {
            #expect(throws: PairingError(.badPayload)) { try LinkRequest(decoding: bytes, transcriptHash: Self.th) }
        }
    }

    @Test func fullInviteExchange() throws {
        var offer = PairingOffer(code: .generate(nameplate: 640), purpose: .invite, expiresAt: 10)
        var h = try Handshake.run(offer: &offer, guestCode: offer.code)
        #expect(h.guestStep.isReady)
        let guestTH = try #require(h.guest.transcriptHash)
        let request = try InviteRequest.make(
            certificate: Self.otherPerson.certificate, signingKey: Self.otherPerson.signingKey, transcriptHash: guestTH)
        let payload = try #require(h.host.receive(try h.guest.send(guestPayload: request.encoded)).payload)
        let hostTH = try #require(h.host.transcriptHash)
        let parsed = try InviteRequest(decoding: payload, transcriptHash: hostTH)
        #expect(parsed.certificate == Self.otherPerson.certificate)
        let group = GroupID.random()
        let grant = try InviteGrant.make(
            certificate: Self.host.certificate, signingKey: Self.host.signingKey, group: group, groupName: "trip",
            role: "writer", peers: ["10.0.0.2:7411", "[::1]:7411"], transcriptHash: hostTH)
        let done = try h.host.finish(hostPayload: grant.encoded)
        let hostPayload = try #require(h.guest.receive(done).hostPayload)
        let got = try InviteGrant(decoding: hostPayload, transcriptHash: guestTH)
        #expect(got.group == group && got.groupName == "trip" && got.role == "writer")
        #expect(got.peers == ["10.0.0.2:7411", "[::1]:7411"])
        #expect(got.certificate.identity == Self.host.identity)
    }

    @Test func invitePayloadsRefuseAnotherTranscriptAndWrongKeys() throws {
        let request = try InviteRequest.make(
            certificate: Self.otherPerson.certificate, signingKey: Self.otherPerson.signingKey, transcriptHash: Self.th)
        _ = try InviteRequest(decoding: request.encoded, transcriptHash: Self.th)
        #expect(throws: PairingError(.badPayload)) {
            try InviteRequest(decoding: request.encoded, transcriptHash: SecureRandom.bytes(32))
        }
        // Signing with a key that is not the certificate's device.
        #expect(throws: PairingError(.badPayload)) {
            try InviteRequest.make(
                certificate: Self.otherPerson.certificate, signingKey: Self.host.signingKey, transcriptHash: Self.th)
        }
        // Someone else's certificate with their own signature: the signature is checked against the cert.
        var m = try CBORDecoder.decodeStrict(request.encoded).mapValue!
        m[.text("certificate")] = .bytes(Self.host.certificate.encoded)
        #expect(throws: PairingError(.badPayload)) {
            try InviteRequest(decoding: CBOREncoder.encode(.map(m)), transcriptHash: Self.th)
        }

        let group = GroupID.random()
        let grant = try InviteGrant.make(
            certificate: Self.host.certificate, signingKey: Self.host.signingKey, group: group, groupName: "g",
            role: "admin", peers: [], transcriptHash: Self.th)
        _ = try InviteGrant(decoding: grant.encoded, transcriptHash: Self.th)
        #expect(throws: PairingError(.badPayload)) {
            try InviteGrant(decoding: grant.encoded, transcriptHash: SecureRandom.bytes(32))
        }
        m = try CBORDecoder.decodeStrict(grant.encoded).mapValue!
        m[.text("role")] = "owner"
        #expect(throws: PairingError(.badPayload)) {
            try InviteGrant(decoding: CBOREncoder.encode(.map(m)), transcriptHash: Self.th)
        }
        // A request is not a grant, even under the same context.
        #expect(throws: PairingError(.badPayload)) {
            try InviteGrant(decoding: request.encoded, transcriptHash: Self.th)
        }
        // Name and role boundaries.
        let name128 = String(repeating: "g", count: PairingPayloadLimits.maxGroupNameBytes)
        let role32 = String(repeating: "r", count: PairingPayloadLimits.maxRoleBytes)
        let edge = try InviteGrant.make(
            certificate: Self.host.certificate, signingKey: Self.host.signingKey, group: group, groupName: name128,
            role: role32, peers: [], transcriptHash: Self.th)
        #expect(try InviteGrant(decoding: edge.encoded, transcriptHash: Self.th).groupName == name128)
        for (name, role) in [(name128 + "g", "r"), ("", "r"), ("g", role32 + "r"), ("g", "")] {
            #expect(throws: PairingError(.badPayload)) {
                try InviteGrant.make(
                    certificate: Self.host.certificate, signingKey: Self.host.signingKey, group: group, groupName: name,
                    role: role, peers: [], transcriptHash: Self.th)
            }
        }
    }

    @Test func payloadFromAnotherExchangeIsRefused() throws {
        // A guest's signed request from exchange A, moved into exchange B by someone who knows the code:
        // B's host sees a signature over A's transcript and refuses it.
        var offer = PairingOffer(code: .generate(nameplate: 9), purpose: .invite, expiresAt: 10)
        let a = try Handshake.run(offer: &offer, guestCode: offer.code)
        var b = try Handshake.run(offer: &offer, guestCode: offer.code)
        let request = try InviteRequest.make(
            certificate: Self.otherPerson.certificate, signingKey: Self.otherPerson.signingKey,
            transcriptHash: try #require(a.guest.transcriptHash))
        let payload = try #require(b.host.receive(try b.guest.send(guestPayload: request.encoded)).payload)
        #expect(throws: PairingError(.badPayload)) {
            try InviteRequest(decoding: payload, transcriptHash: try #require(b.host.transcriptHash))
        }
    }
}
