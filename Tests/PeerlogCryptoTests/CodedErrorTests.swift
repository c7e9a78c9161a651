import PeerlogCrypto
import Testing

struct CodedErrorTests {
    /// Apps switch on codes; the static members must match as patterns, the first one that fits.
    @Test func switchOnCodeMatchesStaticMembers() {
        func name(_ error: CryptoError) -> String {
            switch error.code {
            case .invalidKeyLength: "key"
            case .authenticationFailure: "auth"
            default: "other"
            }
        }
        #expect(name(CryptoError(.invalidKeyLength)) == "key")
        #expect(name(CryptoError(.authenticationFailure, "tag")) == "auth")
        #expect(name(CryptoError(.weakSharedSecret)) == "other")
    }

    /// Equality and hashing are on the code (its name) only, never the detail.
    @Test func equalityIsOnTheCodeOnly() {
        let a = CryptoError(.invalidParameter, "hash length 3")
        let b = CryptoError(.invalidParameter, "key length 9")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(a != CryptoError(.messageTooLarge, "hash length 3"))
        #expect(CryptoError.Code.invalidParameter != .invalidKeyLength)
        #expect(CryptoError.Code.invalidParameter.name == "invalidParameter")
    }

    /// Descriptions keep their words.
    @Test func descriptionsKeepTheirText() {
        #expect("\(CryptoError.Code.weakSharedSecret)" == "weak (all-zero) shared secret")
        #expect(CryptoError(.authenticationFailure).description == "authentication failed")
        #expect(CryptoError(.messageTooLarge, "9 bytes").description == "message too large: 9 bytes")
    }
}
