import Foundation

/// This `backstage` executable, which the harness runs as its child (killed writers and upgrades).
enum Executable {
    static var url: URL { URL(filePath: "/proc/self/exe").resolvingSymlinksInPath() }
}
