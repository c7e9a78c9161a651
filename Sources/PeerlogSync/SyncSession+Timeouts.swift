import PeerlogModel

/// Requests in flight time out (docs/PROTOCOL.md §15.2.7): a peer that never sends `done`
/// (stalled, or buggy) must not leave a request marked in flight forever, since a request for
/// the same (group, selector) is not sent again while one is. Time comes in from the driver.
extension SyncSession {
    /// Time passed: `now` in milliseconds (any monotonic-ish origin; the node passes its
    /// clock every poll). A request whose group has shown no progress (no batch, no `done`)
    /// for `requestTimeoutMs` since it was sent is sent again under a new id, up to
    /// `maxRequestAttempts` sends in all; after the last one times out the session ends with
    /// `error` code `timeout`. Time spent while we withhold all credit does not count; the
    /// first tick, and a clock that goes back, restart every wait.
    public func tick(now: UInt64) -> [SyncAction] {
        requireNoIngestPending()
        if !ticked || now < self.now {
            ticked = true
            for (key, request) in inFlight {
                inFlight[key] = InFlightRequest(id: request.id, attempt: request.attempt, sentAt: now)
            }
            for g in order { groups[g]!.answeredAt = min(groups[g]!.answeredAt, now) }
            creditWithheldAt = min(creditWithheldAt, now)
            heardAt = now
            pingedAt = now
        }
        self.now = now
        if heardSinceTick {
            heardSinceTick = false
            heardAt = now
        }
        var out = [SyncAction]()
        guard phase != .closed else { return out }
        run(&out) { out in try keepAlive(into: &out) }
        guard phase == .open, !inFlight.isEmpty else { return out }
        if granted == 0 { creditWithheldAt = now }
        run(&out) { out in try repeatOverdueRequests(into: &out) }
        return out
    }

    /// §15.2.12: a peer that said `keepalive` (or has not said hello yet) and was silent for
    /// `idleTimeoutMs` is gone; to one that said it, a `ping` every `keepaliveIntervalMs`.
    /// Silence is measured between ticks, so a driver that was busy (its messages queued
    /// behind the work) does not mistake its own delay for the peer's.
    func keepAlive(into out: inout [SyncAction]) throws {
        let timed = phase != .open || peerKeepsAlive
        if timed, now - heardAt >= limits.idleTimeoutMs {
            throw SyncFailure(
                "idle",
                phase == .open
                    ? "nothing received for idleTimeoutMs \(limits.idleTimeoutMs) ms (the peer sends keepalives)"
                    : "no hello within idleTimeoutMs \(limits.idleTimeoutMs) ms")
        }
        if phase == .open, peerKeepsAlive, now - pingedAt >= limits.keepaliveIntervalMs {
            pingedAt = now
            send(.ping, into: &out)
        }
    }

    /// When the wait for `request` (of `key`'s group) began: its send, or the group's or the
    /// session's last sign that an answer could come.
    func waitStarted(_ key: RequestKey, _ request: InFlightRequest) -> UInt64 {
        max(request.sentAt, groups[key.group]?.answeredAt ?? 0, creditWithheldAt)
    }

    func repeatOverdueRequests(into out: inout [SyncAction]) throws {
        let overdue = inFlight.filter { key, request in now - waitStarted(key, request) >= limits.requestTimeoutMs }
            .sorted { $0.value.id < $1.value.id }
        for (key, request) in overdue {
            guard request.attempt < limits.maxRequestAttempts else {
                throw SyncFailure(
                    "timeout",
                    "request \(request.id) for group \(key.group) unanswered: no done and no batch of the group within "
                        + "requestTimeoutMs \(limits.requestTimeoutMs) ms, \(request.attempt) of maxRequestAttempts "
                        + "\(limits.maxRequestAttempts) sent")
            }
            inFlight[key] = nil
            inFlightByID[request.id] = nil
            sendRequest(key, attempt: request.attempt + 1, into: &out)
            out.append(
                .event(
                    .requestRepeated(
                        group: key.group, id: request.id, attempt: request.attempt + 1,
                        waitedMs: now - waitStarted(key, request))))
        }
    }
}
