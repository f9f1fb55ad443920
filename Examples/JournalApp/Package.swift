// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "JournalApp",
    dependencies: [
        .package(path: "../backstage"),
    ],
    targets: [
        .executableTarget(name: "JournalApp", dependencies: [
            .product(name: "Backstage", package: "backstage"),
        ]),
    ]
)
