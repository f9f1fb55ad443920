import ArgumentParser
import Backstage
import BackstageHarness

/// A comma-separated list on the command line, such as `--sizes 500KB,2MB`: every item parsed
/// once, as `Item`, or the whole value refused as a usage error.
struct CommaSeparated<Item: ExpressibleByArgument>: ExpressibleByArgument {
    var items: [Item]
    var defaultValueDescription: String

    init?(argument: String) {
        let parsed = argument.split(separator: ",", omittingEmptySubsequences: false).map {
            Item(argument: $0.trimmingCharacters(in: .whitespaces))
        }
        guard !parsed.contains(where: { $0 == nil }) else { return nil }
        items = parsed.compactMap { $0 }
        defaultValueDescription = argument
    }

    init(_ items: [Item]) {
        self.items = items
        defaultValueDescription = items.map(\.defaultValueDescription).joined(separator: ",")
    }
}

/// A number of bytes written as on the command line: 500KB, 2MB, 1GB (FixtureSpec's units).
struct ByteCount: ExpressibleByArgument {
    var bytes: Int64
    var defaultValueDescription: String

    init?(argument: String) {
        guard let bytes = FixtureSpec.parseSize(argument) else { return nil }
        self.bytes = bytes
        defaultValueDescription = argument
    }

    init(_ bytes: Int64, written: String) {
        self.bytes = bytes
        defaultValueDescription = written
    }
}

/// A count of files, such as 10000 or 10_000.
struct FileCount: ExpressibleByArgument {
    var count: Int

    init?(argument: String) {
        guard let count = Int(argument.replacingOccurrences(of: "_", with: "")), count > 0 else { return nil }
        self.count = count
    }
}

/// `--states`: `all`, or some fixture states separated by commas.
struct FixtureStates: ExpressibleByArgument {
    var states: [FixtureState]
    var defaultValueDescription: String

    init?(argument: String) {
        guard let states = argument == "all" ? FixtureState.allCases : CommaSeparated(argument: argument)?.items
        else { return nil }
        self.states = states
        defaultValueDescription = argument
    }

    static let all = FixtureStates(states: FixtureState.allCases, defaultValueDescription: "all")

    private init(states: [FixtureState], defaultValueDescription: String) {
        self.states = states
        self.defaultValueDescription = defaultValueDescription
    }
}

extension BenchCache: ExpressibleByArgument {}

extension CrashPoints: ExpressibleByArgument {
    /// `all`, `none` or a number of boundaries.
    public init?(argument: String) {
        switch argument {
        case "all": self = .all
        case "none": self = .none
        default:
            guard let n = Int(argument), n >= 0 else { return nil }
            self = .count(n)
        }
    }

    public var defaultValueDescription: String {
        switch self {
        case .all: "all"
        case .none: "none"
        case .count(let n): String(n)
        }
    }
}

extension PowerCutScope: ExpressibleByArgument {
    /// `all`, or a number of cuts above 0.
    public init?(argument: String) {
        if argument == "all" {
            self = .all
        } else {
            guard let limit = Int(argument), limit > 0 else { return nil }
            self = .bounded(limit)
        }
    }

    public var defaultValueDescription: String {
        switch self {
        case .all: "all"
        case .bounded(let limit): String(limit)
        }
    }
}
