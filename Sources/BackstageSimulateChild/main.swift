import BackstageCLI

// `backstage-simulate-child`: the harness's own executable, built beside `backstage` in every
// configuration. It alone offers the crash hooks (`upgrade`/`relocate`/`import --crash-at`), the
// killed writer (`fixture-writer`) and the disk recorder (`record`): neither `backstage` nor any
// library an app links carries them.
await BackstageCommandLine.run(SimulateChild.self)
