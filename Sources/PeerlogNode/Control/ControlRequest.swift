import PeerlogQuickCalls

/// One request on a daemon's control socket (`HOME/peerlog.sock`), sent as one line of text:
///
/// - `ping`: `{"ok":true}` when a daemon answers.
/// - `wrote`: another process (the CLI, an app) wrote to the home's store; the daemon reads it
///   and offers the writes to its peers now rather than at its next poll. `{"ok":true}`.
/// - `status`: the `NodeStatus` document.
/// - `capture start omit-bodies=0|1 max-bytes=N PATH`: starts a capture (N = 0: no rotation;
///   PATH absolute, the rest of the line); the reply is the `CaptureStatus`.
/// - `capture stop`: stops it; the reply is the stopped capture's `CaptureStatus`.
/// - `pair open link expires=SECONDS identity-key=0|1`: opens a device-link session; the reply
///   is the `PairingTicket` (docs/PROTOCOL.md §20).
/// - `pair open invite expires=SECONDS role=ROLE GROUP`: opens a session inviting whoever joins
///   with its code to GROUP (a group id) as ROLE; the reply is the `PairingTicket`.
/// - `pair adopt IDENTITY HOST:PORT [GROUP]`: after `peerlog invite join`, admit IDENTITY, dial
///   HOST:PORT and accept the invitation to GROUP when it arrives; the reply is `{"ok":true}`.
/// - `put GROUP KEY VALUE` (each the hex of its UTF-8 text): a plain `peerlog put`, written by the
///   daemon (`ControlPut`).
///
/// `ControlClient` writes requests with `line` and the daemon reads them with `parse`, so both
/// sides share one grammar. A failure is answered `{"error": "…"}`.
public enum ControlRequest: Sendable, Hashable {
    /// Whether a daemon answers.
    case ping
    /// Another process wrote to the store: look now.
    case wrote
    /// The daemon's `NodeStatus`.
    case status
    /// Start a capture to `path`; `maxBytes` nil: no rotation; `path` must be absolute.
    case captureStart(path: String, maxBytes: Int?, omitBodies: Bool)
    /// Stop the running capture.
    case captureStop
    /// Open a pairing session (`peerlog device link`, `peerlog invite create`).
    case pairOpen(PairingOpenRequest)
    /// Take a pairing's result into the running node (`peerlog invite join`).
    case pairAdopt(PairingAdoption)
    /// Set a key to a text value, as `peerlog put GROUP KEY VALUE` does.
    case put(ControlPut)

    /// The request as sent (without the newline that ends it).
    public var line: String {
        switch self {
        case .ping: "ping"
        case .wrote: "wrote"
        case .status: "status"
        case .captureStart(let path, let maxBytes, let omitBodies):
            "capture start omit-bodies=\(omitBodies ? 1 : 0) max-bytes=\(maxBytes ?? 0) \(path)"
        case .captureStop: "capture stop"
        case .pairOpen(let open): "pair open " + open.words.joined(separator: " ")
        case .pairAdopt(let adopt): "pair adopt " + adopt.words.joined(separator: " ")
        case .put(let put): put.line
        }
    }

    /// Why a line is not a request: the daemon's error reply says this.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        /// The reply's sentence.
        public let description: String
    }

    /// The request a line holds, or why it holds none.
    public static func parse(_ line: String) -> Result<ControlRequest, Invalid> {
        switch line {
        case "ping": return .success(.ping)
        case "wrote": return .success(.wrote)
        case "status": return .success(.status)
        case _ where line.hasPrefix("capture "): return parseCapture(String(line.dropFirst("capture ".count)))
        case _ where line.hasPrefix("pair open "):
            return PairingOpenRequest.parse(line.dropFirst("pair open ".count).split(separator: " ").map(String.init))
                .map { ControlRequest.pairOpen($0) }
        case _ where line.hasPrefix("pair adopt "):
            return PairingAdoption.parse(line.dropFirst("pair adopt ".count).split(separator: " ").map(String.init))
                .map { ControlRequest.pairAdopt($0) }
        case _ where line.hasPrefix("put "):
            guard
                let put = ControlPut.parse(
                    line.dropFirst("put ".count).split(separator: " ", omittingEmptySubsequences: false))
            else {
                return .failure(Invalid(description: ControlPut.usage))
            }
            return .success(.put(put))
        default:
            return .failure(
                Invalid(
                    description:
                        "unknown request \"\(line.prefix(64))\" (known: status, ping, wrote, capture start, capture stop, pair open, pair adopt, put)"
                ))
        }
    }

    /// `start omit-bodies=0|1 max-bytes=N PATH` or `stop`.
    private static func parseCapture(_ request: String) -> Result<ControlRequest, Invalid> {
        let words = request.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true).map(String.init)
        switch words.first {
        case "stop":
            return .success(.captureStop)
        case "start":
            guard words.count == 4, words[1].hasPrefix("omit-bodies="), words[2].hasPrefix("max-bytes="),
                let max = Int(words[2].dropFirst("max-bytes=".count)), words[3].hasPrefix("/")
            else {
                return .failure(Invalid(description: "usage: capture start omit-bodies=0|1 max-bytes=N /absolute/path"))
            }
            return .success(
                .captureStart(path: words[3], maxBytes: max == 0 ? nil : max, omitBodies: words[1] == "omit-bodies=1"))
        default:
            return .failure(Invalid(description: "unknown capture request (known: capture start, capture stop)"))
        }
    }
}
