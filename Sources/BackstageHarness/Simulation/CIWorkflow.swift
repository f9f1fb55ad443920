/// The CI configuration that runs a simulation as shards on a CI system the team already has, and
/// merges their reports into one verdict and one JUnit file: the engine is the CI, Backstage
/// schedules nothing.
public enum CIWorkflow: String, Sendable, Hashable, CaseIterable {
    /// A GitHub Actions job with a `matrix` of shards, then a merge job (artifacts up, then down).
    case github
    /// A GitLab CI job with `parallel: N`, then a merge job reading the shards' artifacts.
    case gitlab

    /// What a job runs before its `backstage` commands when the fragment is given no install
    /// command: it stops the job, saying what is missing, instead of `backstage: command not found`.
    public static let missingInstall =
        "command -v backstage >/dev/null || { echo \"backstage is not installed on this runner: print the fragment "
        + "again with --install 'COMMAND', the command that installs backstage and backstage-simulate-child "
        + "(make install from a checkout of Backstage)\" >&2; exit 1; }"

    /// The fragment to paste into the workflow: `install` (a shell command that puts `backstage`
    /// and `backstage-simulate-child` on the `PATH` of the job's later steps), then `simulate`
    /// (the options of the matrix, without `--shard`, as words of a shell command), run as `shards`
    /// shards, then merged. Without `install`, each job first checks that `backstage` is there
    /// (``missingInstall``).
    ///
    /// For example, `CIWorkflow.github.fragment(simulate: ["backstage", "simulate", "--paths", "every"], shards: 4)`.
    public func fragment(simulate: [String], shards: Int, install: String? = nil) -> String {
        let command = simulate.map(Self.quote).joined(separator: " ")
        let setup = install ?? Self.missingInstall
        // A block scalar keeps the command as written, whatever it quotes.
        func block(_ text: String, indent: String) -> String {
            text.split(separator: "\n", omittingEmptySubsequences: false).map { indent + $0 }.joined(separator: "\n")
        }
        switch self {
        case .github:
            return """
                # backstage simulate as \(shards) shards, then one verdict.
                jobs:
                  simulate:
                    runs-on: ubuntu-latest
                    strategy:
                      fail-fast: false
                      matrix:
                        shard: [\((1...shards).map(String.init).joined(separator: ", "))]
                    steps:
                      - uses: actions/checkout@v4
                      - name: Install backstage
                        run: |
                \(block(setup, indent: "          "))
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
                      - uses: actions/checkout@v4
                      - name: Install backstage
                        run: |
                \(block(setup, indent: "          "))
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
                # backstage simulate as \(shards) shards, then one verdict.
                simulate:
                  stage: test
                  parallel: \(shards)
                  before_script:
                    - |
                \(block(setup, indent: "      "))
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
                  before_script:
                    - |
                \(block(setup, indent: "      "))
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
