import Foundation
import PeerlogCrypto

extension FuzzHarness {
    /// SHA-256's known answers (FIPS 180-2: "abc", the empty input, one million "a"), or what
    /// differs. The fuzz targets check them before fuzzing: their build (Fuzz/, no package traits)
    /// hashes with libsodium instead of swift-crypto, and every CID the harness makes depends on it.
    public static func sha256KnownAnswers() -> String? {
        let cases: [(input: [UInt8], digest: String)] = [
            (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ([], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (
                [UInt8](repeating: 0x61, count: 1_000_000),
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
            ),
        ]
        for c in cases {
            let got = hexString(SHA256.hash(c.input))
            if got != c.digest { return "SHA-256 of \(c.input.count) bytes is \(got), not \(c.digest)" }
        }
        return nil
    }

    /// What each fuzz target runs first: false, after one line on stderr, when SHA-256 is wrong.
    public static func hashesAreRight() -> Bool {
        guard let problem = sha256KnownAnswers() else { return true }
        FileHandle.standardError.write(Data("fuzz: \(problem): the build's SHA-256 is wrong, nothing fuzzed\n".utf8))
        return false
    }
}
