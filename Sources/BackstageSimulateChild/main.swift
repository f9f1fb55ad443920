// `backstage-simulate-child`: the harness's own executable, built beside `backstage` in every
// configuration. It alone offers the crash hooks (`upgrade`/`relocate`/`import` killed at a
// boundary), the killed writer of the fixture states and the disk recorder: neither `backstage` nor
// any library an app links carries them. It reads one `SimulateChildRequest` (JSON) on its standard
// input and takes no arguments.
await SimulateChild.run()
