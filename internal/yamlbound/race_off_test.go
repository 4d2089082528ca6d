//go:build !race

package yamlbound

const raceEnabled = false
