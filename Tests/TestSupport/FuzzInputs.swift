import Foundation

/// The committed fuzz inputs of one libFuzzer target: `fuzz/regressions/<target>` (inputs that once crashed)
/// then `fuzz/corpus/<target>` (seeds), so regression tests replay them without a fuzzer build.
package enum FuzzInputs {
    package static func of(_ target: String) -> [[UInt8]] {
        var root = #filePath
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        return ["regressions", "corpus"].flatMap { folder -> [[UInt8]] in
            let directory = URL(fileURLWithPath: root).appendingPathComponent("fuzz/\(folder)/\(target)")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().compactMap {
                try? Array(Data(contentsOf: directory.appendingPathComponent($0)))
            }
        }
    }
}
