package trace

// forker is a pass that can be copied at its position: the copy yields
// exactly the requests the pass would next (its generator's state is
// copied with it) and advancing one leaves the other where it was. The
// generated traces (Shape, OnOff), a trace held in memory (Sorted,
// FromSlice) and RateScale and Window over them are; a file's pass is
// not. Window uses it to skip the requests before its start once, not
// once per pass.
type forker interface {
	// fork is the copy, or nil when the pass cannot be copied.
	fork() Reader
}

// fork is a copy of r at its position, nil when r cannot be copied.
func fork(r Reader) Reader {
	if f, ok := r.(forker); ok {
		return f.fork()
	}
	return nil
}
