package tune

import "golang.org/x/sys/windows"

// cpuSeconds is the process's CPU time so far (user + kernel), seconds.
func cpuSeconds() float64 {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ticks := func(f windows.Filetime) float64 { return float64(uint64(f.HighDateTime)<<32 | uint64(f.LowDateTime)) }
	return (ticks(kernel) + ticks(user)) / 1e7 // 100-nanosecond intervals
}
