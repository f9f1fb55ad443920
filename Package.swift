// swift-tools-version: 6.1
import PackageDescription

/// libarchive: linked dynamically, or statically in release builds made with
/// BACKSTAGE_STATIC_LIBARCHIVE=1 (the Makefile's `backstage`). Its shared library loads libxml2
/// and, through it, ICU (30 MB of data): 30-40 ms of a command's start from a cold cache. The
/// static library's objects that need them (the xar reader and writer, never called) are dropped
/// by the linker's `--gc-sections`, which release builds pass and debug builds do not: those link
/// the shared library whatever the variable says. For the same reason the Core Data model reader
/// does not use FoundationXML (which links libxml2): it has its own XML reader.
let staticLibarchive = Context.environment["BACKSTAGE_STATIC_LIBARCHIVE"] == "1"
let libarchive: [LinkerSetting] =
    staticLibarchive
    ? [
        .linkedLibrary("archive", .when(configuration: .debug)),
        .linkedLibrary(":libarchive.a", .when(configuration: .release)),
        .linkedLibrary("nettle", .when(configuration: .release)),
        .linkedLibrary("lzma", .when(configuration: .release)),
        .linkedLibrary("bz2", .when(configuration: .release)),
        .linkedLibrary(":liblz4.so.1", .when(configuration: .release)),
    ]
    : [.linkedLibrary("archive")]

let package = Package(
    name: "Backstage",
    // Linux only for now (Swift 6.1+): Sources/Backstage/FileSystem/Syscalls.swift uses Linux calls
    // and says so at compile time elsewhere. No Apple platform is declared until one is supported.
    products: [
        .library(name: "Backstage", targets: ["Backstage"]),
        .library(name: "BackstageExport", targets: ["BackstageExport"]),
        .library(name: "BackstageHarness", targets: ["BackstageHarness"]),
        .executable(name: "backstage", targets: ["BackstageMain"]),
        // The simulator's child: `backstage`'s commands with the crash hooks (`--crash-at`), the fixture
        // states' killed writer and the disk recorder (power cuts), so that neither `backstage` nor any
        // library an app links carries them.
        .executable(name: "backstage-simulate-child", targets: ["BackstageSimulateChild"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `make docs`: the DocC catalogs through `swift package generate-documentation`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(name: "CBackstageSystem"),
        // The power-loss explorer's disk recorder (a recording SQLite VFS, the numbered log, the cut):
        // linked by the simulator's child only, installed by its explicit call, in every build.
        .target(name: "CBackstageDiskRecorder", linkerSettings: [.linkedLibrary("sqlite3")]),
        // A SQLite VFS for the split's bulk copies: reads ahead, combines writes (Stores/BulkCopy.swift).
        .target(name: "CBackstageSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        // The system layer: every system call (FileSystem/Syscalls.swift), durable writes, trees,
        // temporary names, strict JSON. Knows no store, no container: the compiler holds it below the
        // library. Fault injection (FaultInjector) exists in debug builds, for the tests, only.
        .target(
            name: "BackstageSystem",
            dependencies: ["CBackstageSystem"],
            swiftSettings: [.define("BACKSTAGE_FAULT_INJECTION", .when(configuration: .debug))]
        ),
        // The model layer: the container's layout, step phases, the public errors, reports, stores
        // (SQLite files, sidecars, schema ties, StoreContainer) and the classification of files. Knows
        // no journal, no step, no plan.
        .target(
            name: "BackstageModel",
            dependencies: [
                "BackstageSystem",
                "CBackstageSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.define("BACKSTAGE_FAULT_INJECTION", .when(configuration: .debug))]
        ),
        // The engine layer: the journal, the locks, the runner, the step kinds (one folder each in
        // Steps/, registered in Steps/StepKinds.swift) and the plan.
        .target(
            name: "BackstageEngine",
            dependencies: [
                "BackstageSystem",
                "BackstageModel",
                "CBackstageSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.define("BACKSTAGE_FAULT_INJECTION", .when(configuration: .debug))]
        ),
        // The façade an app calls: Relocator, Upgrader (launch check, estimate, dry run, run, launch
        // record), Auditor. It re-exports the layers below.
        .target(
            name: "Backstage",
            dependencies: [
                "BackstageSystem",
                "BackstageModel",
                "BackstageEngine",
                "CBackstageSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.define("BACKSTAGE_FAULT_INJECTION", .when(configuration: .debug))]
        ),
        .systemLibrary(name: "CArchive", providers: [.apt(["libarchive-dev", "libdeflate-dev", "libzstd-dev"])]),
        .target(
            name: "BackstageExport",
            dependencies: ["Backstage", "CArchive", .product(name: "Logging", package: "swift-log")],
            linkerSettings: libarchive
        ),
        // The harness, with the catalog model (Catalog/). Fixtures/ holds data only: the sample
        // Notes app's catalog, bundled from there as the default catalog, and the JSON Schemas.
        .target(
            name: "BackstageHarness",
            dependencies: [
                "Backstage",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("../../Fixtures/Notes")]
        ),
        // The commands of `backstage`, one file per subcommand: a library of this package only (no
        // product), so that the CLI and the simulator's child run the same code.
        .target(
            name: "BackstageCLI",
            dependencies: [
                "Backstage",
                "BackstageExport",
                "BackstageHarness",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "BackstageMain", dependencies: ["BackstageCLI"]),
        .executableTarget(
            name: "BackstageSimulateChild",
            dependencies: [
                "Backstage", "BackstageExport", "BackstageHarness", "BackstageCLI", "CBackstageDiskRecorder",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Links the libraries an app ships and nothing else: the release-products check
        // (scripts/check-library-process) runs it to see that they register no SQLite VFS and
        // install no signal handler.
        .executableTarget(
            name: "BackstageLibraryProbe",
            dependencies: ["Backstage", "BackstageExport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/BackstageLibraryProbe",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        .target(
            name: "BackstageTestSupport",
            dependencies: ["Backstage", "BackstageHarness", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/BackstageTestSupport"
        ),
        .testTarget(
            name: "BackstageTests",
            dependencies: ["Backstage", "BackstageTestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "BackstageExportTests",
            dependencies: ["Backstage", "BackstageExport", "BackstageTestSupport"]
        ),
        .testTarget(
            name: "BackstageHarnessTests",
            dependencies: ["Backstage", "BackstageHarness", "BackstageTestSupport"]
        ),
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "Backstage", "BackstageExport", "BackstageHarness", "BackstageTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "BackstageCLITests",
            dependencies: ["BackstageTestSupport", "BackstageHarness", .product(name: "GRDB", package: "GRDB.swift")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
