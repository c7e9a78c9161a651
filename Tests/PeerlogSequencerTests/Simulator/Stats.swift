/// "min/median/p90/max" of a sample, for printed measurements.
func summary(_ values: [Int]) -> String {
    guard !values.isEmpty else { return "no samples" }
    let sorted = values.sorted()
    let p90 = sorted[min(sorted.count - 1, sorted.count * 9 / 10)]
    return
        "min \(sorted[0]) / median \(sorted[sorted.count / 2]) / p90 \(p90) / max \(sorted[sorted.count - 1]) (n=\(sorted.count))"
}
