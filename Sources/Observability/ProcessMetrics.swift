import Foundation
import Metrics

/// The standard `process_*` metrics (as Prometheus client libraries export them) read from /proc at each
/// scrape, and `appstore_gateway_build_info`.
public struct ProcessMetrics: Sendable {
    private let cpuSeconds: Counter
    private let residentBytes: Gauge
    private let virtualBytes: Gauge
    private let openFDs: Gauge
    private let maxFDs: Gauge
    private let startTime: Gauge

    /// Registers the families in `registry`; `version` goes into the build-info metric.
    public init(registry: MetricsRegistry, version: String = BuildInfo.version) {
        cpuSeconds = registry.counter(
            "process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds."
        ).labels()
        residentBytes = registry.gauge("process_resident_memory_bytes", help: "Resident memory size in bytes.").labels()
        virtualBytes = registry.gauge("process_virtual_memory_bytes", help: "Virtual memory size in bytes.").labels()
        openFDs = registry.gauge("process_open_fds", help: "Number of open file descriptors.").labels()
        maxFDs = registry.gauge("process_max_fds", help: "Maximum number of open file descriptors.").labels()
        startTime = registry.gauge(
            "process_start_time_seconds", help: "Start time of the process since unix epoch in seconds."
        ).labels()
        registry.gauge(
            "appstore_gateway_build_info", help: "Always 1; the labels say which build is running.",
            labelNames: ["version", "swift_version"]
        ).labels(version, BuildInfo.swiftVersion).set(1)
        if let stat = Self.read("/proc/self/stat").flatMap(ProcStat.init(parsing:)),
            let boot = Self.read("/proc/stat").flatMap(ProcStat.bootTime(parsing:))
        {
            startTime.set(Double(boot) + Double(stat.startTicks) / Self.ticksPerSecond)
        }
    }

    /// Reads /proc now; called before each `/metrics` render.
    public func update() {
        if let stat = Self.read("/proc/self/stat").flatMap(ProcStat.init(parsing:)) {
            let seconds = Double(stat.userTicks + stat.systemTicks) / Self.ticksPerSecond
            cpuSeconds.follow(total: seconds)
            residentBytes.set(Double(stat.residentPages) * Double(sysconf(Int32(_SC_PAGESIZE))))
            virtualBytes.set(Double(stat.virtualBytes))
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            openFDs.set(Double(max(0, entries.count - 1)))  // minus the descriptor that lists the directory
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFDs.set(Double(limit.rlim_cur)) }
    }

    private static var ticksPerSecond: Double { Double(max(1, sysconf(Int32(_SC_CLK_TCK)))) }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path), data.count < 1 << 20 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The fields of /proc/[pid]/stat the process metrics need (proc(5)).
struct ProcStat: Equatable {
    var userTicks: UInt64
    var systemTicks: UInt64
    var startTicks: UInt64
    var virtualBytes: UInt64
    var residentPages: UInt64

    /// Parses the line; the command name (field 2) may hold spaces and parentheses, so fields are counted
    /// after its LAST closing parenthesis.
    init?(parsing text: String) {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is field 3 (state): field n is fields[n - 3].
        func field(_ n: Int) -> UInt64? {
            n - 3 < fields.count ? UInt64(fields[n - 3].trimmingCharacters(in: .whitespacesAndNewlines)) : nil
        }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23),
            let rss = field(24)
        else { return nil }
        userTicks = utime
        systemTicks = stime
        startTicks = start
        virtualBytes = vsize
        residentPages = rss
    }

    /// `btime` (boot time, seconds since the epoch) from /proc/stat.
    static func bootTime(parsing text: String) -> UInt64? {
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return UInt64(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
