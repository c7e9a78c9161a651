import PeerlogModel
import PeerlogNoise

extension SecureChannel {
    /// XX: msg1 (empty payload) →, ← msg2 (responder's certificate and proof), msg3 (initiator's) →.
    mutating func receiveHandshake(_ body: [UInt8]) -> [ChannelAction] {
        let payload: [UInt8]
        do { payload = try handshake.readMessage(body) } catch let error as NoiseError
            where error.code == .decryptFailed
        {
            return fail(.protocolError("handshake failed: decrypt failed (wrong network id or corrupted message)"))
        } catch {
            return fail(.protocolError("handshake failed: \(error)"))
        }
        switch role {
        case .responder where !handshake.isComplete:
            guard payload.isEmpty else {
                return fail(.protocolError("handshake failed: message 1 must have an empty payload"))
            }
            do {
                return [.write(frames([try handshake.writeMessage(payload: HandshakePayload(device: device).encoded)]))]
            } catch {
                return fail(.protocolError("handshake failed: \(error)"))
            }
        case .responder:
            // Split first: a rejected initiator gets a close record saying why.
            establishCiphers()
            switch authenticate(payload) {
            case .success(let certificate): return finish(certificate)
            case .failure(let rejection): return fail(rejection.reason)
            }
        case .initiator:
            // A rejected responder gets no msg3, so it never learns our identity.
            let certificate: DeviceCertificate
            switch authenticate(payload) {
            case .success(let c): certificate = c
            case .failure(let rejection): return fail(rejection.reason)
            }
            let msg3: [UInt8]
            do { msg3 = try handshake.writeMessage(payload: HandshakePayload(device: device).encoded) } catch {
                return fail(.protocolError("handshake failed: \(error)"))
            }
            establishCiphers()
            return [.write(frames([msg3]))] + finish(certificate)
        }
    }

    struct Rejection: Error { let reason: ChannelCloseReason }

    /// Decodes and verifies the peer's certificate, binds it to the Noise static key, checks the
    /// device key's proof, then asks `authorize`.
    private func authenticate(_ payload: [UInt8]) -> Result<DeviceCertificate, Rejection> {
        let reason: ChannelCloseReason
        do {
            let presented = try HandshakePayload(encoded: payload)
            let certificate = try DeviceCertificate(encoded: presented.certificate)
            let who = "device \(certificate.device)"
            if case .invalid(let why) = certificate.verify() {
                reason = .unauthorized("\(who): \(why)")
            } else if certificate.noiseKey != handshake.remoteStaticKey {
                reason = .unauthorized("\(who): static key does not match its certificate")
            } else if !presented.proves(certificate) {
                reason = .unauthorized("\(who): the device key's proof does not verify")
            } else if case .deny(let why) = authorize(certificate) {
                reason = .unauthorized("\(who): \(why)")
            } else {
                return .success(certificate)
            }
        } catch {
            reason = .protocolError("handshake failed: peer certificate: \(error)")
        }
        return .failure(Rejection(reason: reason))
    }

    private mutating func establishCiphers() {
        // Cannot throw: called only once the handshake is complete.
        let (send, receive) = try! handshake.split()
        sendCipher = send
        receiveCipher = receive
        handshakeHash = handshake.handshakeHash
        if let e = handshake.initiatorEphemeralKey, let s = send.exportKeyForKeyLog(),
            let r = receive.exportKeyForKeyLog()
        {
            transportKeys = TransportKeys(
                initiatorEphemeral: e.rawRepresentation,
                initiatorToResponder: role == .initiator ? s : r,
                responderToInitiator: role == .initiator ? r : s)
        }
    }

    private mutating func finish(_ certificate: DeviceCertificate) -> [ChannelAction] {
        peerCertificate = certificate
        if let budget = reassemblyBudget {
            reassemblyReservation = ReassemblyReservation(budget: budget, identity: certificate.identity)
        }
        state = .established
        return [.established(certificate)]
    }
}
