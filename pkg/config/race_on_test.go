//go:build race

package config

// raceEnabled: built with -race, whose runtime allocates and maps memory of
// its own (allocation counts and resident memory are not the program's).
const raceEnabled = true
