import BackstageCLI

// `backstage`: the commands of Sources/BackstageCLI, and nothing that records or injects faults.
await BackstageCommandLine.run()
