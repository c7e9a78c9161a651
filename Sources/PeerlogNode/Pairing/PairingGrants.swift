import PeerlogEngine
import PeerlogModel
import PeerlogPairing

/// What a host does once a guest proved it knows the code (docs/PROTOCOL.md §20.6):
///
/// - **link**: certify the guest's new device keys with this identity (and hand over the
///   identity key when the session shares it), and remember the device;
/// - **invite**: add the guest's identity to the group with the session's role (an identity
///   already pending or active there is left as it is) and answer with this device's
///   certificate, signed over the transcript.
///
/// Either way the answer names where this node listens, so the guest's node can dial it.
struct PairingGrants: Sendable {
    /// What the host answers, and one line for the log and `status`.
    struct Granted: Sendable {
        let payload: [UInt8]
        /// A linked device's new certificate.
        let certificate: DeviceCertificate?
        let summary: String
    }

    let device: LocalDevice
    let replica: Replica

    /// Refuses a session this node could never grant (an invitation to a group it does not hold,
    /// or as a member that may not invite).
    func check(_ request: PairingOpenRequest) throws {
        guard case .invite(let group, _) = request.kind else {
            do { _ = try device.requireIdentityKey(for: "link devices") } catch { throw NodeError.pairing("\(error)") }
            return
        }
        guard let state = try replica.state(of: group, view: .tentative) else {
            throw NodeError.pairing("this replica holds no group \(group)")
        }
        guard state.status == .active else { throw NodeError.pairing("group \(group) is deleted") }
        guard let me = state.member(device.identity), me.status == .active, me.role == .owner || me.role == .admin
        else {
            throw NodeError.pairing("only an owner or admin of group \(state.name) may invite")
        }
    }

    func grant(
        _ request: PairingOpenRequest, guestPayload: [UInt8], transcriptHash: [UInt8], listening: PeerAddress?,
        localHost: String?
    ) throws -> Granted {
        let peers = addresses(listening, localHost: localHost)
        switch request.kind {
        case .link(let sharesIdentityKey):
            let asked = try LinkRequest(decoding: guestPayload, transcriptHash: transcriptHash)
            let grant = try LinkGrant.make(
                identityKey: try device.requireIdentityKey(for: "link devices"), request: asked,
                shareIdentity: sharesIdentityKey, peers: peers,
                hostDevice: device.device, createdAt: WallClock.nowMillis(), transcriptHash: transcriptHash)
            // `device list` shows it from now on (docs/PROTOCOL.md §10).
            try replica.recordDevice(grant.certificate)
            // It reads every encrypted group of the identity from the start (§22.5).
            try replica.shareEpochKeys(with: grant.certificate)
            return Granted(
                payload: grant.encoded, certificate: grant.certificate,
                summary:
                    "linked device \(asked.device) (\(asked.name))\(sharesIdentityKey ? " with the identity key" : "")"
            )
        case .invite(let group, let role):
            let asked = try InviteRequest(decoding: guestPayload, transcriptHash: transcriptHash)
            let identity = asked.certificate.identity
            guard identity != device.identity else {
                throw PairingError(.refused, "that device is this identity's own: link it with `peerlog device link`")
            }
            guard let state = try replica.state(of: group, view: .tentative) else {
                throw PairingError(.refused, "the host no longer holds group \(group)")
            }
            let status = state.member(identity)?.status
            if status != .pending && status != .active {
                _ = try replica.append(.memberAdded(identity: identity, role: role), to: group)
            }
            // The code proved this device: it gets the group's keys now, so it reads and writes
            // as soon as it accepts, whoever is online then (§22.5).
            if state.encryption != nil { try replica.shareEpochKeys(group, with: asked.certificate) }
            let grant = try InviteGrant.make(
                certificate: device.certificate, signingKey: device.signingKey, group: group, groupName: state.name,
                role: role.rawValue, peers: peers, transcriptHash: transcriptHash)
            return Granted(
                payload: grant.encoded, certificate: nil,
                summary: "invited \(identity) (device \(asked.certificate.name)) to \(state.name) as \(role.rawValue)")
        }
    }

    /// Where the guest's node should dial: the listen address, with a wildcard host replaced by
    /// the address the guest reached us on.
    private func addresses(_ listening: PeerAddress?, localHost: String?) -> [String] {
        guard let address = listening else { return [] }
        if ["0.0.0.0", "::", ""].contains(address.host), let localHost {
            return [PeerAddress(host: localHost, port: address.port).description]
        }
        return [address.description]
    }
}
