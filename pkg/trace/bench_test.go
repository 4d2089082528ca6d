package trace

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchRead reads every request of src once per iteration and reports the
// cost per row.
func benchRead(b *testing.B, src Source) {
	b.Helper()
	rows := 0
	b.ReportAllocs()
	for b.Loop() {
		r, err := src.Open()
		if err != nil {
			b.Fatal(err)
		}
		rows = 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows++
		}
		r.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

// BenchmarkReadAzureCSV reads the Azure conversation trace (19,366 rows,
// unquoted, CRLF), the common case on the replay's path.
func BenchmarkReadAzureCSV(b *testing.B) {
	src, err := Parse(testdata(b, "azure-llm-2023-conv.csv"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, src)
}

// BenchmarkReadGenericCSV reads a generic CSV of 20,000 unquoted rows.
func BenchmarkReadGenericCSV(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(GenericHeader + "\n")
	for i := range 20000 {
		fmt.Fprintf(&sb, "%.3f,%d,%d\n", float64(i)*0.125, 100+i%900, 1+i%300)
	}
	p := filepath.Join(b.TempDir(), "g.csv")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	src, err := Parse(p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, src)
}

// BenchmarkReadMooncake reads the Mooncake synthetic trace (JSON lines,
// each row's keys read one by one so a key given twice is refused).
func BenchmarkReadMooncake(b *testing.B) {
	src, err := Parse(testdata(b, "mooncake-synthetic.jsonl"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchRead(b, src)
}
