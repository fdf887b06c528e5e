//go:build race

package proxy

// raceEnabled: the race detector changes what memory measurements see.
const raceEnabled = true
