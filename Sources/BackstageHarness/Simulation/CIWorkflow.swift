/// The CI configuration that runs a simulation as shards on a CI system the team already has, and
/// merges their reports into one verdict and one JUnit file: the engine is the CI, Backstage
/// schedules nothing.
public enum CIWorkflow: String, Sendable, Hashable, CaseIterable {
    /// A GitHub Actions job with a `matrix` of shards, then a merge job (artifacts up, then down).
    case github
    /// A GitLab CI job with `parallel: N`, then a merge job reading the shards' artifacts.
    case gitlab

    /// The fragment to paste into the workflow: `simulate` (the options of the matrix, without
    /// `--shard`, as words of a shell command) run as `shards` shards, then merged.
    ///
    /// For example, `CIWorkflow.github.fragment(simulate: ["backstage", "simulate", "--paths", "every"], shards: 4)`.
    public func fragment(simulate: [String], shards: Int) -> String {
        let command = simulate.map(Self.quote).joined(separator: " ")
        switch self {
        case .github:
            return """
                # backstage simulate as \(shards) shards, then one verdict. Install backstage before each
                # backstage step as your other jobs do (`make install` from a checkout of Backstage).
                jobs:
                  simulate:
                    runs-on: ubuntu-latest
                    strategy:
                      fail-fast: false
                      matrix:
                        shard: [\((1...shards).map(String.init).joined(separator: ", "))]
                    steps:
                      - uses: actions/checkout@v4
                      - name: Simulate shard ${{ matrix.shard }} of \(shards)
                        run: |
                          \(command) --shard ${{ matrix.shard }}/\(shards) --json > simulate-shard-${{ matrix.shard }}.json
                      - uses: actions/upload-artifact@v4
                        if: always()
                        with:
                          name: simulate-shard-${{ matrix.shard }}
                          path: simulate-shard-${{ matrix.shard }}.json
                  simulate-merge:
                    needs: simulate
                    if: always()
                    runs-on: ubuntu-latest
                    steps:
                      - uses: actions/download-artifact@v4
                        with:
                          pattern: simulate-shard-*
                          merge-multiple: true
                      - name: Merge the shards
                        run: |
                          backstage simulate merge simulate-shard-*.json --junit simulate.xml
                      - uses: actions/upload-artifact@v4
                        if: always()
                        with:
                          name: simulate-junit
                          path: simulate.xml

                """
        case .gitlab:
            return """
                # backstage simulate as \(shards) shards, then one verdict. Install backstage in the jobs'
                # image (or a before_script) as your other jobs do.
                simulate:
                  stage: test
                  parallel: \(shards)
                  script:
                    - |
                      \(command) --shard ${CI_NODE_INDEX}/${CI_NODE_TOTAL} --json > simulate-shard-${CI_NODE_INDEX}.json
                  artifacts:
                    when: always
                    paths:
                      - simulate-shard-*.json
                simulate-merge:
                  stage: test
                  needs: [simulate]
                  when: always
                  script:
                    - |
                      backstage simulate merge simulate-shard-*.json --junit simulate.xml
                  artifacts:
                    when: always
                    reports:
                      junit: simulate.xml

                """
        }
    }

    /// A word as the shell reads it: quoted when it holds anything but `[A-Za-z0-9_./=:,@%+-]`.
    static func quote(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || "_./=:,@%+-".unicodeScalars.contains($0)
        }
        return plain && !word.isEmpty ? word : "'" + word.replacing("'", with: #"'\''"#) + "'"
    }
}
