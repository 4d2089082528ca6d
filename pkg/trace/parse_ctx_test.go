package trace

import "context"

// Parse is ParseContext without a context, for this package's tests.
func Parse(spec string, opts Options) (Source, error) {
	return ParseContext(context.Background(), spec, opts)
}

// Sorted is SortedContext without a context, for this package's tests.
func Sorted(s Source) (Source, error) { return SortedContext(context.Background(), s) }

// Window is WindowContext without an interrupt, for the tests.
func Window(s Source, start, end float64) Source {
	return WindowContext(context.Background(), s, start, end)
}
