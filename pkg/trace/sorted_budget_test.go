package trace

import (
	"context"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/membudget"
)

// TestSortedWithinBudget: --sort read the whole file into memory whatever
// its size (a 4 GiB file of short rows is some 700 million requests, 11 GB
// held, more with append's copies). The rows are now held only while the
// next block fits the memory budget. By hand: the first block is 4,096
// rows (65,536 bytes); with 64 KiB available it fits, the next (4096 +
// 1024 + 4096 = 9,216 rows, 147,456 bytes) does not, so a 5,000-row trace
// is refused at row 4,096 naming the file and --sort, and admitted with
// 1 MiB available, its rows in order (1 to 5000).
func TestSortedWithinBudget(t *testing.T) {
	reqs := make([]Request, 5000)
	for i := range reqs {
		reqs[i] = Request{Arrival: float64(len(reqs) - i), Prompt: 1, Output: 1} // reversed
	}
	src := FromSlice("t.csv", 0, reqs)
	_, err := sorted(context.Background(), src, func() membudget.Budget { return membudget.Budget{Limit: 64 << 20, Available: 64 << 10} })
	want := "t.csv: --sort holds the rows in memory (16 bytes each): 4096 rows read and more to come would need 0.141 MiB, more than the 0.0625 MiB this process may still take (memory limit 64 MiB); sort the file by arrival on disk instead"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q...", err, want)
	}
	out, err := sorted(context.Background(), src, func() membudget.Budget { return membudget.Budget{Limit: 64 << 20, Available: 1 << 20} })
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, out)
	if len(got) != 5000 || got[0].Arrival != 1 || got[4999].Arrival != 5000 {
		t.Errorf("%d rows from %v to %v, want 5000 from 1 to 5000, in order", len(got), got[0].Arrival, got[len(got)-1].Arrival)
	}
}
