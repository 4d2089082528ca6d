package trace

import "context"

// CheckEvery is how many requests a pass reads between two looks at its
// context (WithContext): 65,536 rows, a few milliseconds of parsing, so an
// interrupt ends a pass over a 4 GiB file at once rather than once the
// file is read.
const CheckEvery = 1 << 16

// WithContext is r whose Next returns ctx's error once ctx is done,
// looked at before the first request and every CheckEvery after; the rows
// r skipped (SkippedRows) are r's.
func WithContext(ctx context.Context, r Reader) Reader {
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   Reader
	n   int
}

func (c *ctxReader) Next() (Request, error) {
	if c.n%CheckEvery == 0 {
		if err := c.ctx.Err(); err != nil {
			return Request{}, err
		}
	}
	c.n++
	return c.r.Next()
}

func (c *ctxReader) Close() error { return c.r.Close() }

// Skipped forwards SkippedRows.
func (c *ctxReader) Skipped() int64 { return SkippedRows(c.r) }
