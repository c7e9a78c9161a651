import Foundation
import PeerlogCrypto
import PeerlogModel
import PeerlogNode
import PeerlogPairing
import Synchronization

/// A new device linked to an identity by code (`Peerlog.join(home:code:peer:deviceName:)`).
public struct PeerlogLinkedDevice: Sendable {
    /// The device as its home now holds it (same identity as the host's).
    public let device: PeerlogDevice
    /// The string both screens may show; equal on both sides when nobody stood in between.
    public let confirmation: String
    /// Whether the host shared the identity key (then this device can link and revoke too).
    public let holdsIdentityKey: Bool
    /// Where the host's node listens (written to `HOME/pairings.conf` as `peer`).
    public let peers: [String]
}

/// The name `PeerlogInviteCodeJoin` had before "invitation" came to mean a pending membership only.
@available(*, deprecated, renamed: "PeerlogInviteCodeJoin")
public typealias PeerlogInvitationJoin = PeerlogInviteCodeJoin

/// A group joined by code (`Peerlog.joinWithCode(code:peer:)`).
public struct PeerlogInviteCodeJoin: Sendable {
    /// The group invited to.
    public let group: GroupID
    /// Its name as the inviter sees it.
    public let groupName: String
    /// The role offered.
    public let role: String
    /// The inviting person.
    public let inviter: IdentityID
    /// The inviting device's name.
    public let inviterDevice: String
    /// The string both screens may show.
    public let confirmation: String
    /// The safety number of this identity and the inviter's, to compare out of band.
    public let safetyNumber: String
    /// Where the inviter's node listens.
    public let peers: [String]
    /// Whether a node running for this home (in this process or a daemon) took the pairing in
    /// at once; otherwise the next one started on the home reads `HOME/pairings.conf`.
    public let nodeNotified: Bool
}

extension Peerlog {
    /// How long a pairing code lives by default (10 minutes).
    public static let defaultPairingLifetime: Duration = PairingLimits().defaultLifetime

    /// Opens a session that links a new device to this identity, on the node running for this
    /// home (this process's `run`, or the daemon): `peerlog device link`. The returned code is
    /// single use, dies after 3 wrong tries or at `expiresIn`, and is entered on the new device
    /// with `Peerlog.join(home:code:peer:deviceName:)`. `sharesIdentityKey` (the default) hands
    /// the new device the identity key too, so it can link and revoke devices itself.
    public func linkDevice(
        expiresIn: Duration = Peerlog.defaultPairingLifetime, sharesIdentityKey: Bool = true
    ) async throws -> PairingTicket {
        try await openPairing(
            .init(kind: .link(sharesIdentityKey: sharesIdentityKey), lifetimeSeconds: seconds(expiresIn)))
    }

    /// Opens a session that adds whoever enters its code to `group` as `role`: `peerlog invite
    /// create`. The other person runs `joinWithCode(code:peer:)`; no identity is typed.
    public func createInviteCode(
        to group: GroupID, as role: Role = .member, expiresIn: Duration = Peerlog.defaultPairingLifetime
    ) async throws -> PairingTicket {
        try await openPairing(.init(kind: .invite(group: group, role: role), lifetimeSeconds: seconds(expiresIn)))
    }

    /// Joins a group by the code its inviter read out: `peerlog invite join`. Runs the PAKE
    /// with the inviter's session (at `peer`, or found on the LAN), proves this device, and
    /// records the inviter (admitted, dialed, its invitation accepted when it arrives) in
    /// `HOME/pairings.conf` and in the node running for this home.
    public func joinWithCode(code text: String, peer: PeerAddress? = nil) async throws -> PeerlogInviteCodeJoin {
        let code = try Self.parseCode(text)
        let device = self.device
        let outcome = try await Self.runGuest(code: code, purpose: .invite, peer: peer, networkID: networkID) { hash in
            try InviteRequest.make(certificate: device.certificate, signingKey: device.signingKey, transcriptHash: hash)
                .encoded
        }
        let grant: InviteGrant
        do { grant = try InviteGrant(decoding: outcome.hostPayload, transcriptHash: outcome.transcriptHash) } catch {
            throw PeerlogError(.pairing, "the inviter's answer is not valid: \(error)")
        }
        let inviter = grant.certificate.identity
        let peers = grant.peers.compactMap { try? PeerAddress(parsing: $0) }
        let file = PairingsFile(home: home)
        do {
            try file.add(
                [("allow", inviter.string), ("accept", grant.group.string)] + peers.map { ("peer", $0.description) })
        } catch {
            throw PeerlogError(.file, "paired, but cannot write \(file.path): \(error)")
        }
        var notified = false
        if let address = peers.first {
            notified = tellNode(PairingAdoption(identity: inviter, address: address, accept: grant.group))
        }
        return PeerlogInviteCodeJoin(
            group: grant.group, groupName: grant.groupName, role: grant.role, inviter: inviter,
            inviterDevice: grant.certificate.name, confirmation: outcome.confirmation,
            safetyNumber: safetyNumber(with: inviter), peers: grant.peers, nodeNotified: notified)
    }

    /// The name `createInviteCode` had before "invitation" came to mean a pending membership only.
    @available(*, deprecated, renamed: "createInviteCode(to:as:expiresIn:)")
    public func createInvitation(
        to group: GroupID, as role: Role = .member, expiresIn: Duration = Peerlog.defaultPairingLifetime
    ) async throws -> PairingTicket {
        try await createInviteCode(to: group, as: role, expiresIn: expiresIn)
    }

    /// The name `joinWithCode` had before "invitation" came to mean a pending membership only.
    @available(*, deprecated, renamed: "joinWithCode(code:peer:)")
    public func joinInvitation(code text: String, peer: PeerAddress? = nil) async throws -> PeerlogInviteCodeJoin {
        try await joinWithCode(code: text, peer: peer)
    }

    /// Creates a home for a new device of an existing identity, by the code `device link`
    /// printed on a device of it: `peerlog init --join`. New device keys are made here and
    /// certified by the identity over the PAKE; the home must hold no keys yet. Afterwards the
    /// device's node finds the host (`HOME/pairings.conf`) and receives every group of the
    /// identity.
    public static func join(
        home: String, code text: String, peer: PeerAddress? = nil, deviceName: String? = nil, networkID: String = ""
    ) async throws -> PeerlogLinkedDevice {
        let code = try parseCode(text)
        let name = try checkedDeviceName(deviceName)
        guard !FileIO.exists(LocalDevice.paths(home: home).certificate) else {
            throw PeerlogError(.home, "\(home) holds a device already; join from an empty home")
        }
        let signingKey = Ed25519.PrivateKey()
        let noiseKey = X25519.PrivateKey()
        let requested = Mutex<LinkRequest?>(nil)
        let outcome = try await runGuest(code: code, purpose: .link, peer: peer, networkID: networkID) { hash in
            let request = try LinkRequest.make(
                signingKey: signingKey, noiseKey: noiseKey.publicKey, name: name, transcriptHash: hash)
            requested.withLock { $0 = request }
            return request.encoded
        }
        guard let request = requested.withLock({ $0 }) else {
            throw PeerlogError(.pairing, "the exchange ended before this device asked for a certificate")
        }
        let grant: LinkGrant
        do {
            grant = try LinkGrant(
                decoding: outcome.hostPayload, transcriptHash: outcome.transcriptHash, expecting: request)
        } catch {
            throw PeerlogError(.pairing, "the host's answer is not valid: \(error)")
        }
        let device: LocalDevice
        do {
            device = try LocalDevice.linked(
                identityKey: try grant.identitySeed.map { try Ed25519.PrivateKey(seed: $0) }, signingKey: signingKey,
                noiseKey: noiseKey,
                certificate: grant.certificate)
            try device.save(home: home)
            try PairingsFile(home: home).add(grant.peers.map { ("peer", $0) })
        } catch {
            throw PeerlogError(.home, "linked, but cannot write the keys to \(home): \(error)")
        }
        return PeerlogLinkedDevice(
            device: PeerlogDevice(device, home: home), confirmation: outcome.confirmation,
            holdsIdentityKey: device.identityKey != nil,
            peers: grant.peers)
    }

    /// The safety number of this identity and `other` (60 digits in groups of five): the same
    /// on both sides; compare it out of band to know the identity is the person you think.
    public func safetyNumber(with other: IdentityID) -> String { SafetyNumber(identity, other).description }

    // MARK: Internals

    private var networkID: String {
        (try? NetworkOptions.daemon(home: home))?.configuration.channel.networkID ?? ""
    }

    private func seconds(_ duration: Duration) -> Int { Int(duration.components.seconds) }

    private func openPairing(_ request: PairingOpenRequest) async throws -> PairingTicket {
        do {
            if let node = running.withLock({ $0 }) { return try await node.openPairing(request) }
            let socket = try NetworkOptions.daemon(home: home).configuration.controlSocketPath(home: home)
            return try await Self.blocking {
                try ControlClient.decode(
                    PairingTicket.self, try ControlClient.request(.pairOpen(request), socketPath: socket))
            }
        } catch let error as PeerlogError {
            throw error
        } catch {
            throw PeerlogError(.pairing, "cannot open a pairing session: \(error)")
        }
    }

    /// Hands a finished invitation to the node running for this home; false when none runs.
    private func tellNode(_ adoption: PairingAdoption) -> Bool {
        if let node = running.withLock({ $0 }) { return (try? node.adoptPairing(adoption)) != nil }
        guard let socket = try? NetworkOptions.daemon(home: home).configuration.controlSocketPath(home: home),
            let reply = try? ControlClient.request(.pairAdopt(adoption), socketPath: socket)
        else { return false }
        return (try? ControlClient.decode([String: Bool].self, reply))?["ok"] == true
    }

    static func parseCode(_ text: String) throws -> PairingCode {
        do { return try PairingCode(parsing: text) } catch { throw PeerlogError(.pairing, "\(error)") }
    }

    static func runGuest(
        code: PairingCode, purpose: PairingPurpose, peer: PeerAddress?, networkID: String,
        payload: @escaping @Sendable ([UInt8]) throws -> [UInt8]
    ) async throws -> PairingGuest.Outcome {
        do {
            return try await PairingGuest.run(
                code: code, purpose: purpose, peer: peer, networkID: networkID, payload: payload)
        } catch {
            throw PeerlogError(.pairing, "\(error)")
        }
    }
}
