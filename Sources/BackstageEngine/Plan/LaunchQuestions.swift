import BackstageModel
/// What the launch check asks the launch record about each step of a plan, worked out once, when
/// the plan's steps are set, instead of at every check: the folder a step looks in and the store
/// it looks for there, as the bytes of the record's words once decoded (the record escapes a
/// space as `%20`; the check decodes while it compares).
///
/// A check then compares those bytes with the record's. Asked from the steps themselves, each
/// check took every store's path apart again and copied the steps and the container it read
/// (a retain and a release of each of their strings): more of its own time than the record's
/// parse (measured with `perf`, 2026-11-28).
///
/// A question only ever rules a step out, when the record vouches for it; a step it does not
/// rule out is asked the long way (``Upgrader/isNeeded(_:container:fileSystem:probe:)``), and a
/// step naming an App Group has no question: whether the container defines the group is asked first.
package struct LaunchQuestions: Sendable {
    package struct Question: Sendable {
        /// A quarantine: whether the record stamped `folder` quiet (no stray). Else whether it
        /// lists the store `name` absent from `folder`.
        package var isQuarantine: Bool
        package var root: ContainerRoot.Kind
        /// The folder as the record names it, decoded, root included (`applicationSupport/Old Stores`).
        package var folderWord: Range<Int>
        /// The folder's path under its root (`Old Stores`), for its location when it is looked at.
        package var folderPath: Range<Int>
        package var name: Range<Int>
    }

    /// One per step, nil for a step asked the long way.
    package private(set) var questions: [Question?] = []
    /// The questions' folders and names, one after another.
    package private(set) var bytes: [UInt8] = []

    /// Calls `body` with the questions and their bytes where they are (no copy, no retain).
    @inline(__always)
    package func withQuestions<R>(_ body: (UnsafeBufferPointer<Question?>, UnsafeRawBufferPointer) -> R) -> R {
        questions.withUnsafeBufferPointer { questions in bytes.withUnsafeBytes { body(questions, $0) } }
    }

    init(_ steps: [UpgradeStep]) {
        questions.reserveCapacity(steps.count)
        for step in steps { questions.append(question(for: step)) }
    }

    private mutating func question(for step: UpgradeStep) -> Question? {
        let definition = step.definition
        guard definition.firstLocation(where: { $0.root.kind == .appGroup }) == nil else { return nil }
        let location: ContainerLocation
        let isQuarantine: Bool
        switch definition.launchLook {
        case .folder(let folder): (location, isQuarantine) = (folder, true)
        case .store(let store): (location, isQuarantine) = (store, false)
        case nil: return nil
        }
        let path = Array(location.path.utf8)
        // A store: split at its last `/`, as the record names folders and stores.
        let nameStart = isQuarantine ? path.count : (path.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0)
        let folder = path[..<(isQuarantine ? path.count : max(nameStart - 1, 0))]
        let wordStart = bytes.count
        bytes += location.root.rawValue.utf8
        let folderStart: Int
        if folder.isEmpty {
            folderStart = bytes.count
        } else {
            bytes.append(UInt8(ascii: "/"))
            folderStart = bytes.count
            bytes += folder
        }
        let folderEnd = bytes.count
        bytes += path[nameStart...]
        return Question(
            isQuarantine: isQuarantine, root: location.root.kind, folderWord: wordStart..<folderEnd,
            folderPath: folderStart..<folderEnd, name: folderEnd..<bytes.count)
    }
}

/// Derived from the steps: plans with the same steps ask the same questions.
extension LaunchQuestions: Hashable {
    package static func == (lhs: LaunchQuestions, rhs: LaunchQuestions) -> Bool { true }
    package func hash(into hasher: inout Hasher) {}
}
