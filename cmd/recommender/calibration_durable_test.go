package main

import (
	"reflect"
	"testing"

	"github.com/infscale/infscale/internal/atomicfile"
)

// TestCalibrationWrittenDurably: load --calibrate's (and backtest
// --calibrate's) file, which a serve config's replica.calibration names
// and a restart reads, is written with the data and the rename synced
// (atomicfile.WriteDurable), not left possibly empty by a node crash.
func TestCalibrationWrittenDurably(t *testing.T) {
	if reflect.ValueOf(writeCalibrationData).Pointer() != reflect.ValueOf(atomicfile.WriteDurable).Pointer() {
		t.Fatal("the calibration file is not written with atomicfile.WriteDurable")
	}
}
