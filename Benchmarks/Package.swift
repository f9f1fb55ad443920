// swift-tools-version: 6.1
// The benchmark suites, in a package of their own so that users of Backstage never inherit
// the benchmark dependency. Run them with `make bench`; `make bench-check` compares a run with
// the thresholds committed in Thresholds/.
import PackageDescription

// Benchmark names carry no spaces or slashes: package-benchmark 1.38.1 writes threshold files
// with those replaced but looks them up by the raw name.
let suites = ["Relocation", "Split", "SchemaMigration", "NeedsUpgrade", "Export", "Import", "FixtureGeneration"]

let package = Package(
    name: "BackstageBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Backstage", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Backstage", package: "Backstage"),
                .product(name: "BackstageHarness", package: "Backstage"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Support"
        ),
    ] + suites.map { name in
        .executableTarget(
            name: name,
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Backstage", package: "Backstage"),
                .product(name: "BackstageExport", package: "Backstage"),
                .product(name: "BackstageHarness", package: "Backstage"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/\(name)",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    }
)
